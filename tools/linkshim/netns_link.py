"""Two hosts joined through mdcast-linkshim, each in a network namespace of its own
(needs root). The shim runs in a third namespace between two veth pairs:

    hub namespace            shim namespace                 edge namespace
    <tag>h 10.251.X.1 ──veth── <tag>sh ═ mdcast-linkshim ═ <tag>se ──veth── <tag>e 10.251.X.2

The hosts' veths compute their own checksums and segment TCP themselves (offloads
off): the shim forwards frames as bytes, so a frame must be complete when it is read.
The namespaces (and with them the veths) are removed even when the test fails.
Used by the tests in network namespaces and by mdcast-bench cascade --cascade-shim-rtt-ms;
standard library only.
"""
import os
import random
import re
import signal
import subprocess
import sys
import time

LINKSHIM = os.environ.get("MDCAST_LINKSHIM", "mdcast-linkshim")


def sh(*argv, check_rc=True):
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if check_rc and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()}")
    return done.returncode == 0


def wait_for_log(process, text, timeout=10):
    """Until `text` is in the process's log (its log_text()); raises if it exits first."""
    deadline = time.monotonic() + timeout
    while text not in process.log_text():
        if process.popen.poll() is not None or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    if text not in process.log_text():
        raise RuntimeError(f"'{text}' not logged:\n{process.log_text()[-3000:]}")


# Legacy ethtool ioctls (linux/ethtool.h): tx checksum, scatter-gather, TSO, GSO, GRO off.
# Debian's ethtool is not installed everywhere; the ioctl needs nothing but Python.
OFFLOADS_OFF = r"""
import fcntl, socket, struct, sys, array
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for cmd in (0x17, 0x19, 0x1f, 0x24, 0x2c):
    value = array.array("B", struct.pack("II", cmd, 0))
    request = struct.pack("16sQ", sys.argv[1].encode(), value.buffer_info()[0]) + bytes(16)
    try:
        fcntl.ioctl(s.fileno(), 0x8946, request)
    except OSError as error:
        if cmd != 0x2c:  # GRO may not be settable; the rest must be
            sys.exit(f"{sys.argv[1]}: ethtool command {cmd:#x}: {error}")
"""


class ShimmedLink:
    """The three namespaces; `hub` and `edge` are (namespace, address). `start(name, argv)`
    starts a process whose stderr goes to a log: it returns an object with popen, log_text()
    and stop() (the test harness's and the bench's Stack.start both do)."""

    def __init__(self, start, binary=LINKSHIM):
        self.start = start
        self.binary = binary
        self.tag = f"mls{os.getpid() % 100000}"
        subnet = f"10.251.{random.randint(1, 250)}"
        self.hub = (f"{self.tag}hub", f"{subnet}.1")
        self.edge = (f"{self.tag}edge", f"{subnet}.2")
        self.shim_ns = f"{self.tag}shim"
        self.created = []
        self.shim = None
        self.shims = 0

    def __enter__(self):
        try:
            for ns in (self.shim_ns, self.hub[0], self.edge[0]):
                sh("ip", "netns", "add", ns)
                self.created.append(ns)
                self.exec_in(ns, "ip", "link", "set", "lo", "up")
            for (ns, address), host_end, shim_end in ((self.hub, "h", "sh"), (self.edge, "e", "se")):
                host_end, shim_end = self.tag + host_end, self.tag + shim_end
                sh("ip", "link", "add", host_end, "netns", ns, "type", "veth", "peer", "name", shim_end,
                   "netns", self.shim_ns)
                self.exec_in(ns, "ip", "addr", "add", f"{address}/24", "dev", host_end)
                for where, end in ((ns, host_end), (self.shim_ns, shim_end)):
                    self.exec_in(where, sys.executable, "-c", OFFLOADS_OFF, end)
                    self.exec_in(where, "ip", "link", "set", end, "up")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        self.stop_shim()
        for ns in reversed(self.created):
            sh("ip", "netns", "del", ns, check_rc=False)
        return False

    def exec_in(self, ns, *argv, check_rc=True):
        return sh("ip", "netns", "exec", ns, *argv, check_rc=check_rc)

    def start_shim(self, *shape, seconds=300):
        """Starts mdcast-linkshim between the two veths with `shape` (its options), hub
        side first: a value "X,Y" is X from the hub to the edge and Y back."""
        self.stop_shim()
        self.shims += 1
        self.shim = self.start(f"linkshim{self.shims}", [
            "ip", "netns", "exec", self.shim_ns, self.binary, "--a", self.tag + "sh", "--b", self.tag + "se",
            "--seconds", str(seconds), *map(str, shape)])
        wait_for_log(self.shim, "bridging")
        return self.shim

    def cut(self, on=True):
        self.shim.popen.send_signal(signal.SIGUSR1 if on else signal.SIGUSR2)
        wait_for_log(self.shim, "link cut" if on else "link restored")

    def stop_shim(self):
        """Stops the shim; returns its counters {direction: {name: value}} (hub->edge first)."""
        if not self.shim:
            return {}
        shim, self.shim = self.shim, None
        shim.stop()
        return shim_counters(shim.log_text())


def shim_counters(log):
    """The exit counters of mdcast-linkshim: {"A->B": {"in": N, "out": N, "loss": N, ...}}."""
    counters = {}
    for match in re.finditer(r"^mdcast-linkshim: (\S+->\S+): (in=.*)$", log, re.M):
        counters[match.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", match.group(2))}
    return counters
