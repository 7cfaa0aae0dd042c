"""100 % loss on the active distributor's path, in network namespaces (needs root; skipped
otherwise): its bridge port set down while it runs, the server moves every item to the standby
(both fed by one dual-homed publisher) within the silence timeout, with no suspect status and
no gap; restored, the items move back after the hold-down.

Distributors 1 and 2 each in a namespace of their own, a server with its clients in
another, and the feed handler (one dual-homed SDK Publisher, publish_to_all) in a
fourth, all on one bridge (in a namespace of its own), multicast with TTL 1 on the
test's own 10.250.x.0/24 addresses. Distributor 1's path is cut completely (its
bridge port set down) while it keeps running: the server hears nothing more from
it and switches every item to distributor 2 within the silence timeout, and the
clients see no suspect status and no gap; the publisher's link to distributor 1
is reported down while it publishes on through distributor 2. The path restored:
the publisher reconnects and re-images distributor 1, and the server switches back
per rank after the hold-down. Two well-behaved clients check every value and
sequence (as test_dual_home.py). The namespaces are removed even when the test fails.
"""
import datetime
import signal
import subprocess
import sys
import time

from harness import BIN, SDK_BIN, admin_port, check, wait_for_events, wait_for_log
from test_dual_home import DualHomed, downs_since_up, link_events
from test_netns_backbone import in_namespaces
from test_redundancy import HOLD_DOWN_MS, NAMES, SILENT_MS, switch_lines

PUBLISHER_PORT = 14001
CLIENT_PORT = 14002


class Watched(DualHomed):
    """The checks of DualHomed (who serves each item, every value and sequence) on
    processes started in namespaces."""

    def __init__(self, server, publisher, client, sdk, net, ns):  # noqa: the stack is the test's own
        self.server, self.publisher, self.client, self.sdk = server, publisher, client, sdk
        self.net, self.ns = net, ns

    def items_json(self):
        """The server's /items, asked from inside its namespace."""
        url = f"http://127.0.0.1:{admin_port(self.server)}/items?limit=1000"
        done = subprocess.run(["ip", "netns", "exec", self.ns, sys.executable, "-c",
                               f"import urllib.request; print(urllib.request.urlopen({url!r}, timeout=5).read().decode())"],
                              capture_output=True, text=True, timeout=30)
        check(done.returncode == 0, f"/items in {self.ns}: {done.stderr.strip()}")
        return done.stdout


def switch_time(server, source, target):
    """When the server logged the switch from `source` to `target` (epoch seconds)."""
    for line in server.log_text().splitlines():
        if f"moved from distributor {source} to distributor {target}" in line:
            return datetime.datetime.fromisoformat(line.split()[0]).timestamp()
    raise AssertionError(f"no switch from {source} to {target} logged")


def run_test(net, start, write, group):
    addr = {name: net.hosts[name][1] for name in net.hosts}
    ns = {name: net.hosts[name][0] for name in net.hosts}
    distributors = {}
    for n in (1, 2):
        cfg = write(f"dist{n}.yaml", f"distributor:\n  id: {n}\npublishers:\n  address: {addr[f'd{n}']}\n"
                                     f"  port: {PUBLISHER_PORT}\nbackbone:\n  group: {group}\n"
                                     f"  interface: {addr[f'd{n}']}\n  ttl: 1\n")
        distributors[n] = start(ns[f"d{n}"], f"dist{n}", [BIN["distributor"], "--config", cfg])
        wait_for_log(distributors[n], "publishers on")
        if n == 1:
            scfg = write("server.yaml", f"clients:\n  port: {CLIENT_PORT}\nbackbone:\n  group: {group}\n"
                                        f"  interface: {addr['srv']}\n  source_silent_ms: {SILENT_MS}\n"
                                        f"redundancy:\n  hold_down_ms: {HOLD_DOWN_MS}\n")
            server = start(ns["srv"], "server", [BIN["server"], "--config", scfg])
            wait_for_log(server, "clients on")
            # Distributor 2 is started once 1 serves: the group starts as it is ranked.
            publisher = start(ns["feed"], "publisher", [
                SDK_BIN["publisher"], "--publish-to-all", "--distributors",
                f"{addr['d1']}:{PUBLISHER_PORT},{addr['d2']}:{PUBLISHER_PORT}", "--service", "MDCAST",
                "--items", ",".join(NAMES), "--rate", "400", "--duration", "600"], stdout=True)
        wait_for_log(server, f"({n << 16 | 1}) is up", timeout=20)
    items = ("--service", "MDCAST", "--items", ",".join(NAMES), "--duration", "600")
    client = start(ns["srv"], "client", [BIN["client"], "--server", f"127.0.0.1:{CLIENT_PORT}", "--output",
                                         "json", *items], stdout=True)
    sdk = start(ns["srv"], "consumer", [SDK_BIN["consumer"], "--servers", f"127.0.0.1:{CLIENT_PORT}", *items],
                stdout=True)
    watched = Watched(server, publisher, client, sdk, net, ns["srv"])
    watched.wait_served_by(1, timeout=30)

    d1_port = net.bridge_port("d1")
    cut_at = time.time()
    net.exec_in(net.bridge, "ip", "link", "set", d1_port, "down")  # 100 % loss, both ways
    watched.wait_served_by(2, timeout=30)
    check(switch_lines(server) == [("1", "2", "source_silent")], f"switches {switch_lines(server)}")
    took_ms = (switch_time(server, 1, 2) - cut_at) * 1000
    print(f"path cut: switched to the standby {took_ms:.0f} ms after the cut "
          f"(backbone.source_silent_ms {SILENT_MS})", flush=True)
    check(took_ms < SILENT_MS + 3000, f"the switch took {took_ms:.0f} ms")
    check(distributors[1].popen.poll() is None, "distributor 1 stopped running")
    wait_for_events(publisher, lambda _: link_events(publisher, PUBLISHER_PORT, "down", host=addr["d1"]), 20,
                    "the publisher's link to distributor 1 reported down")

    net.exec_in(net.bridge, "ip", "link", "set", d1_port, "up")
    wait_for_events(publisher, lambda _: len(link_events(publisher, PUBLISHER_PORT, "up", host=addr["d1"])) == 2, 40,
                    "the publisher logged in to distributor 1 again")
    watched.wait_served_by(1, timeout=40)
    check(switch_lines(server) == [("1", "2", "source_silent"), ("2", "1", "preferred")],
          f"switches {switch_lines(server)}")
    check(downs_since_up(publisher, PUBLISHER_PORT, host=addr["d2"]) == 0, "the link to distributor 2 went down")
    watched.finish(switches=2)
    publisher.popen.send_signal(signal.SIGINT)
    check(publisher.wait(15) == 0, "publisher exit code")


def main():
    return in_namespaces("test_netns_active_path_cut_and_restored", ["feed", "d1", "d2", "srv"], run_test)


if __name__ == "__main__":
    sys.exit(main())
