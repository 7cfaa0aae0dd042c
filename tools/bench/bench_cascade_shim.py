"""mdcast-bench cascade --cascade-shim-rtt-ms MS (root only): the resync part across a link with
a round trip, not loopback. The hub (distributor, source, hub server) in one network namespace,
the edge and its client in another, mdcast-linkshim between them adding MS/2 each way
(tools/linkshim/netns_link.py). The link is cut with the shim's SIGUSR1 for the outage (the edge
declares it dead by its heartbeat timeout) and restored with SIGUSR2. The daemons' admin ports
live in their namespaces, so the figures are read there by a small poller run with ip netns exec:
it stamps the moment every item is current on the clock the bench reads too (CLOCK_MONOTONIC is
not per namespace)."""
import os
import subprocess
import sys
import time

from bench_stack import Stack, merge_config

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../linkshim"))
from netns_link import ShimmedLink, wait_for_log  # noqa: E402

ADMIN = 14201  # each daemon's admin port, in a namespace of its own

# Prints the monotonic time once every item is current at the edge (argv: items, timeout s),
# or "never"; with items 0, prints one metric's value (argv: 0, name).
POLLER = r"""
import re, sys, time, urllib.request
def read():
    return urllib.request.urlopen("http://127.0.0.1:%d/metrics", timeout=5).read().decode()
def value(text, name):
    m = re.search(r"^mdcast_server_" + name + r" (\S+)$", text, re.M)
    return float(m.group(1)) if m else -1
items = int(sys.argv[1])
if items == 0:
    print(value(read(), sys.argv[2]))
    sys.exit()
deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    text = read()
    if value(text, "items_suspect") == 0 and value(text, "items") >= items and value(text, "upstream_link_up") == 1:
        print(time.monotonic())
        sys.exit()
    time.sleep(0.005)
print("never")
""" % ADMIN


def in_ns(ns, *argv):
    return ["ip", "netns", "exec", ns, *map(str, argv)]


def poll(ns, *args, timeout=120):
    out = subprocess.run(in_ns(ns, sys.executable, "-c", POLLER, *args), capture_output=True, text=True,
                         timeout=timeout)
    return out.stdout.strip()


class ShimmedCascade:
    """Starts the hub side and the edge side in their namespaces; all stopped by the Stack."""

    def __init__(self, runner, args, stack, link):
        self.runner, self.args, self.stack, self.link = runner, args, stack, link

    def config(self, name, overrides):
        profile = "distributor" if name == "distributor" else "server"
        with open(os.path.join(self.stack.profile_dir, profile + ".yaml")) as f:
            text = merge_config(f.read(), {"admin.enabled": True, "admin.address": "127.0.0.1", "admin.port": ADMIN,
                                           **overrides})
        path = os.path.join(self.stack.log_dir, name + ".yaml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def daemon(self, ns, name, binary, overrides, ready):
        p = self.stack.start(name, in_ns(ns, binary, "--config", self.config(name, overrides)), "daemon")
        wait_for_log(p, ready, 30)
        return p

    def start(self, items, rate, outage):
        (hub_ns, hub_ip), (edge_ns, _) = self.link.hub, self.link.edge
        big = {"output.max_bytes": 64 << 20, "output.expected_clients": 2}
        self.daemon(hub_ns, "distributor", self.runner.bin["distributor"],
                    {"publishers.port": 14001, "admin.port": ADMIN - 1}, "publishers on")
        # clients.max_frame_bytes: see bench_cascade.resync.
        self.daemon(hub_ns, "hub", self.runner.bin["server"], {
            "clients.address": "0.0.0.0", "clients.port": 14002, "clients.max_frame_bytes": 1 << 20, **big},
            "clients on")
        edge = self.daemon(edge_ns, "edge", self.runner.bin["server"], {
            "clients.port": 14002, "upstream.kind": "tcp", "upstream.parents": f'["{hub_ip}:14002"]',
            "upstream.user": "edge", "upstream.heartbeat_interval_ms": 1000, "upstream.heartbeat_timeout_ms": 3000,
            "upstream.reconnect_delay_ms": 100, **big}, "clients on")
        source = self.stack.start("source", in_ns(hub_ns, self.runner.bin["source"], "--distributor", "127.0.0.1:14001",
                                                  "--items", items, "--rate", rate, "--duration", outage + 120))
        source.wait_for_log("items registered", 120)
        edge.wait_for_log("service MDCAST (", 60)
        self.stack.start("client-edge", in_ns(edge_ns, self.runner.bin["client"], "--server", "127.0.0.1:14002",
                                              "--item-count", items, "--output", "none", "--duration", outage + 90))


def resync(runner, args):
    items, outage, rtt_ms = args.cascade_items, args.cascade_outage_s, args.cascade_shim_rtt_ms
    if os.geteuid() != 0:
        sys.exit("mdcast-bench: --cascade-shim-rtt-ms needs root (network namespaces)")
    log_dir = os.path.join(runner.out, "logs", "cascade-resync-shim")
    stack = Stack(runner.bin, os.path.join(runner.profiles, "latency"), log_dir, client="lean", source="lean")
    link = ShimmedLink(stack.start, binary=runner.bin["linkshim"])
    with link, stack:  # the processes stopped before their namespaces go
        link.start_shim("--delay-ms", rtt_ms / 2)
        (hub_ns, _), (edge_ns, _) = link.hub, link.edge
        ShimmedCascade(runner, args, stack, link).start(items, args.cascade_resync_rate, outage)
        if poll(edge_ns, items, 60) == "never":
            raise RuntimeError(f"cascade resync (shim): the edge never had its {items} items current ({log_dir})")
        link.cut()
        time.sleep(outage)
        images_before = float(poll(hub_ns, 0, "refreshes_out_total"))
        suspect = float(poll(edge_ns, 0, "items_suspect"))
        waiter = subprocess.Popen(in_ns(edge_ns, sys.executable, "-c", POLLER, items, 60), stdout=subprocess.PIPE,
                                  text=True)
        time.sleep(0.5)  # the poller running (it waits for the link, which is still cut)
        restored = time.monotonic()
        link.cut(on=False)
        done = waiter.communicate(timeout=120)[0].strip()
        time.sleep(0.5)  # images still in flight are counted too
        images = float(poll(hub_ns, 0, "refreshes_out_total")) - images_before
        commands = list(stack.commands)
    changed = min(items, int(args.cascade_resync_rate * outage))
    took = None if done == "never" else float(done) - restored
    return {"items": items, "outage_s": outage, "rate": args.cascade_resync_rate, "changed": changed,
            "suspect_at_restore": suspect, "resync_s": took, "images": images, "images_per_item": images / items,
            "images_per_changed": images / max(changed, 1), "rtt_ms": rtt_ms, "commands": commands}
