"""Multi-host backbone in network namespaces (needs root; skipped otherwise).

A distributor in one namespace and three servers in three others, joined by a
bridge (in a namespace of its own), multicast with TTL 1 on the test's own
10.250.x.0/24 addresses. Server 3's link is lossy (5 % loss, reordering,
duplication): with tc netem when the kernel has it, otherwise with mdcast's own
receive-side injection (said loudly). Every client of every server must get
every update once, in order; the clean servers must not have NAKed anything.
The namespaces are removed even when the test fails.
"""
import os
import random
import re
import subprocess
import sys
import tempfile

from harness import BIN, Process, check, wait_for_log
from streams import check_full_stream, messages, sent_updates

ITEMS = 20
NAMES = [f"ITEM{i:06d}" for i in range(ITEMS)]
SKIP = 77


def sh(*argv, check_rc=True):
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if check_rc and done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)}: {done.stderr.strip()}")
    return done.returncode == 0


class Network:
    """A bridge namespace and one namespace per host, each with a veth into the bridge."""

    def __init__(self, hosts):
        self.tag = f"mdc{os.getpid() % 100000}"
        self.subnet = f"10.250.{random.randint(1, 250)}"
        self.bridge = f"{self.tag}br"
        self.hosts = {name: (f"{self.tag}{name}", f"{self.subnet}.{i + 1}") for i, name in enumerate(hosts)}
        self.created = []

    def __enter__(self):
        sh("ip", "netns", "add", self.bridge)
        self.created.append(self.bridge)
        self.exec_in(self.bridge, "ip", "link", "add", "br0", "type", "bridge", "mcast_snooping", "0")
        self.exec_in(self.bridge, "ip", "link", "set", "br0", "up")
        for i, (name, (ns, address)) in enumerate(self.hosts.items()):
            sh("ip", "netns", "add", ns)
            self.created.append(ns)
            host_end, bridge_end = f"{self.tag}h{i}", f"{self.tag}b{i}"
            sh("ip", "link", "add", host_end, "type", "veth", "peer", "name", bridge_end)
            sh("ip", "link", "set", host_end, "netns", ns)
            sh("ip", "link", "set", bridge_end, "netns", self.bridge)
            self.exec_in(self.bridge, "ip", "link", "set", bridge_end, "master", "br0", "up")
            self.exec_in(ns, "ip", "link", "set", "lo", "up")
            self.exec_in(ns, "ip", "addr", "add", f"{address}/24", "dev", host_end)
            self.exec_in(ns, "ip", "link", "set", host_end, "up")
            self.exec_in(ns, "ip", "route", "add", "224.0.0.0/4", "dev", host_end)
        return self

    def __exit__(self, *exc):
        for ns in reversed(self.created):
            sh("ip", "netns", "del", ns, check_rc=False)
        return False

    def exec_in(self, ns, *argv, check_rc=True):
        return sh("ip", "netns", "exec", ns, *argv, check_rc=check_rc)

    def bridge_port(self, host):
        return f"{self.tag}b{list(self.hosts).index(host)}"


def last(log, key):
    """The final value of a counter in a daemon's log."""
    values = re.findall(rf"\b{key}=(\d+)", log)
    check(values, f"no '{key}' counter in the log")
    return int(values[-1])


def in_namespaces(test_name, hosts, test):
    """Runs test(net, start, write, group) in a Network of `hosts` (skipped without
    root): start(ns, name, argv, stdout=False) starts a process in namespace `ns`,
    write(name, text) writes a file in the test's directory. Prints PASS or FAIL
    (with every process's log); every process is stopped and every namespace
    removed, also when the test fails. Returns the exit code."""
    if os.geteuid() != 0:
        print(f"SKIP {test_name}: needs root to create network namespaces")
        return SKIP
    workdir = tempfile.mkdtemp(prefix="mdcast-netns-")
    processes = []
    group = f"239.255.{random.randint(1, 254)}.{random.randint(1, 254)}"

    def start(ns, name, argv, stdout=False):
        p = Process(name, ["ip", "netns", "exec", ns, *argv], os.path.join(workdir, name + ".log"),
                    os.path.join(workdir, name + ".out") if stdout else None)
        processes.append(p)
        return p

    def write(name, text):
        path = os.path.join(workdir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    with Network(hosts) as net:
        try:
            test(net, start, write, group)
            print(f"PASS {test_name}", flush=True)
            return 0
        except Exception as error:  # noqa: BLE001
            print(f"FAIL {test_name}: {error}", flush=True)
            for p in processes:
                sys.stderr.write(f"---- {p.name} ----\n{p.log_text()[-4000:]}\n")
            sys.stderr.write(f"---- logs kept in {workdir}\n")
            return 1
        finally:
            for p in reversed(processes):
                p.stop()


def three_servers_one_lossy_link(net, start, write, group):
    lossy_port = net.bridge_port("s3")
    netem = net.exec_in(net.bridge, "tc", "qdisc", "add", "dev", lossy_port, "root", "netem",
                        "loss", "5%", "delay", "200us", "reorder", "25%", "50%", "duplicate", "5%",
                        check_rc=False)
    injected = "" if netem else (
        "testing:\n  loss:\n    receive_rate: 0.05\n    receive_reorder_rate: 0.25\n"
        "    receive_duplicate_rate: 0.05\n    seed: 11\n")
    print("server 3 link: " + ("tc netem 5% loss, reordering, duplication" if netem else
          "tc netem is not available in this kernel: using mdcast's receive-side injection "
          "(5% loss, 25% reordering, 5% duplication) on server 3"), flush=True)

    dist_ns, dist_addr = net.hosts["dist"]
    dcfg = write("distributor.yaml", f"backbone:\n  group: {group}\n  interface: {dist_addr}\n  ttl: 1\n")
    distributor = start(dist_ns, "distributor", [BIN["distributor"], "--config", dcfg])
    wait_for_log(distributor, "publishers on")
    servers = {}
    for name in ("s1", "s2", "s3"):
        ns, addr = net.hosts[name]
        extra = injected if name == "s3" else ""
        cfg = write(f"{name}.yaml", f"backbone:\n  group: {group}\n  interface: {addr}\n{extra}")
        servers[name] = start(ns, name, [BIN["server"], "--config", cfg])
        wait_for_log(servers[name], "clients on")
    source = start(dist_ns, "source", [BIN["source"], "--items", str(ITEMS), "--rate", "2000",
                                       "--duration", "4"])
    wait_for_log(source, "items registered")
    clients = {name: start(net.hosts[name][0], f"client-{name}",
                           [BIN["client"], "--server", "127.0.0.1:14002", "--items", ",".join(NAMES),
                            "--output", "json", "--duration", "6"], stdout=True)
               for name in servers}
    check(source.wait(30) == 0, "source failed")
    total = sent_updates(source)
    for client in clients.values():
        check(client.wait(30) == 0, f"{client.name} exit code")
    for p in servers.values():
        p.stop()
    for name, client in clients.items():
        check_full_stream(messages(client), NAMES, total, ITEMS, only_final_status=True)
        summary = [m for m in messages(client) if m["type"] == "summary"][-1]
        print(f"{name}: {summary['updates']} updates, latency p50 {summary['latency_us']['p50']} us, "
              f"p99 {summary['latency_us']['p99']} us")
    logs = {name: p.log_text() for name, p in servers.items()}
    check(last(logs["s3"], "repaired") > 0, "server 3 repaired nothing: was its link lossy?")
    for name in ("s1", "s2", "s3"):
        check(last(logs[name], "unrecoverable") == 0, f"{name}: unrecoverable loss")
    for name in ("s1", "s2"):
        check(last(logs[name], "naks") == 0, f"{name} (clean link) sent NAKs")


def main():
    return in_namespaces("test_netns_three_servers_one_lossy_link", ["dist", "s1", "s2", "s3"],
                         three_servers_one_lossy_link)


if __name__ == "__main__":
    sys.exit(main())
