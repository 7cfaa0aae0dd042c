"""mdcast-linkshim end to end (needs root; skipped otherwise): two namespaces joined through the
shim (tools/linkshim/netns_link.py), UDP datagrams and TCP connections across it. Each shaping trips as asked
and is counted: the delay holds a TCP handshake back by a round trip, the rate limit's queue
tail-drops a burst, a frame over --max-frame-bytes is dropped as oversize, a cut drops
everything until it is restored. Times are only checked from below (a loaded machine makes
them longer, never shorter)."""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tools/linkshim"))
from netns_link import ShimmedLink  # noqa: E402
from harness import Process, check, run

SKIP = 77
PORT = 15999

# Counts the datagrams arriving on PORT until a quiet second (after the first), prints the count.
RECEIVER = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.bind(("0.0.0.0", int(sys.argv[1])))
print("ready", flush=True)
s.settimeout(float(sys.argv[2]))
count = 0
try:
    while True:
        s.recv(65536)
        count += 1
        s.settimeout(1.0)
except socket.timeout:
    pass
print(count, flush=True)
"""

# Sends COUNT datagrams of SIZE bytes to HOST:PORT at once.
SENDER = r"""
import socket, sys
host, port, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
for _ in range(count):
    s.sendto(b"x" * size, (host, port))
"""

# Times a TCP connection to HOST:PORT (refused is an answer too: a round trip).
CONNECT = r"""
import socket, sys, time
start = time.monotonic()
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10).close()
except ConnectionRefusedError:
    pass
print(f"{time.monotonic() - start:.6f}", flush=True)
"""


def in_ns(ns, script, *args):
    return ["ip", "netns", "exec", ns, sys.executable, "-c", script, *map(str, args)]


def datagrams(link, count, size, first_wait=5.0):
    """Sends `count` datagrams of `size` bytes from the edge to the hub; returns how many arrived."""
    receiver = subprocess.Popen(in_ns(link.hub[0], RECEIVER, PORT, first_wait), stdout=subprocess.PIPE, text=True)
    try:
        check(receiver.stdout.readline().strip() == "ready", "the receiver did not start")
        subprocess.run(in_ns(link.edge[0], SENDER, link.hub[1], PORT, count, size), check=True, timeout=30)
        out, _ = receiver.communicate(timeout=60)
    finally:
        if receiver.poll() is None:
            receiver.kill()
            receiver.wait()
    return int(out.strip())


def edge_to_hub(counters):
    """The counters of the edge -> hub direction (the shim's second)."""
    return list(counters.values())[1]


class TemporaryLink:
    """A ShimmedLink whose shim logs go to a directory removed afterwards."""

    def __enter__(self):
        self.dir = tempfile.TemporaryDirectory(prefix="mdcast-linkshim-")
        self.link = ShimmedLink(lambda name, argv: Process(name, argv, os.path.join(self.dir.name, name + ".log")))
        self.link.__enter__()
        return self.link

    def __exit__(self, *exc):
        try:
            if exc[0] is not None and self.link.shim:
                sys.stderr.write(f"---- linkshim log ----\n{self.link.shim.log_text()}\n")
            self.link.__exit__(*exc)
        finally:
            self.dir.cleanup()
        return False


def test_delay_holds_a_handshake_back_by_a_round_trip():
    with TemporaryLink() as link:
        link.start_shim("--delay-ms", "100,50")
        datagrams(link, 1, 100)  # neighbours resolved: the handshake pays only its round trip
        took = float(subprocess.run(in_ns(link.edge[0], CONNECT, link.hub[1], PORT), capture_output=True,
                                    text=True, check=True, timeout=30).stdout)
        check(took >= 0.149, f"a TCP handshake across 100 + 50 ms took {took * 1000:.0f} ms")
        print(f"handshake across 100 + 50 ms one-way delays: {took * 1000:.0f} ms", flush=True)


def test_rate_limit_queue_tail_drops_a_burst():
    with TemporaryLink() as link:
        link.start_shim("--rate-bps", "0,800000", "--queue-bytes", "262144,20000")  # 100 kB/s toward the hub
        datagrams(link, 1, 100)
        start = time.monotonic()
        got = datagrams(link, 200, 1000)
        counters = edge_to_hub(link.stop_shim())
        print(f"burst of 200 x 1,000 bytes into 100 kB/s behind 20 kB: {got} arrived, "
              f"{counters['queue_full']} tail-dropped", flush=True)
        check(counters["queue_full"] > 0 and got < 200, f"nothing dropped: {got} arrived, {counters}")
        check(got >= 15, f"only {got} datagrams arrived: the queue should have held about 20")
        dropped = counters["queue_full"] + counters["overrun"]
        check(got + dropped >= 200, f"datagrams lost outside the shim's counters: {counters}")
        # What got through left at the rate: 1,042 bytes on the wire each.
        check(time.monotonic() - start >= (got - 1) * 1042 * 8 / 800000, "faster than the rate limit")


def test_oversize_frames_are_dropped_and_counted():
    with TemporaryLink() as link:
        link.start_shim("--max-frame-bytes", "600")
        check(datagrams(link, 5, 100) == 5, "small datagrams lost")
        check(datagrams(link, 5, 1000, first_wait=2.0) == 0, "a frame over --max-frame-bytes went through")
        counters = edge_to_hub(link.stop_shim())
        check(counters["oversize"] >= 5, f"oversize not counted: {counters}")


def test_cut_drops_everything_until_restored():
    with TemporaryLink() as link:
        link.start_shim()
        check(datagrams(link, 10, 100) == 10, "datagrams lost before the cut")
        link.cut()
        check(datagrams(link, 10, 100, first_wait=2.0) == 0, "datagrams crossed a cut link")
        link.cut(on=False)
        check(datagrams(link, 10, 100) == 10, "datagrams lost after the restore")
        counters = edge_to_hub(link.stop_shim())
        check(counters["cut"] >= 10, f"the cut's drops not counted: {counters}")


def main():
    if os.geteuid() != 0:
        print("SKIP: the link shim needs root to create network namespaces")
        return SKIP
    run([test_delay_holds_a_handshake_back_by_a_round_trip,
         test_rate_limit_queue_tail_drops_a_burst,
         test_oversize_frames_are_dropped_and_counted,
         test_cut_drops_everything_until_restored])


if __name__ == "__main__":
    sys.exit(main())
