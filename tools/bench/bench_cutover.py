"""mdcast-bench cutover: how long a redundancy group takes to move every subscribed item to the
hot standby (docs/operations.md, "Redundancy").

Two distributors (ids 1 and 2) on one backbone, each with its own mdcast-source publishing the
same N items, one server (latency profile), one raw-protocol client subscribed to all N. Then one
failure of the active side: its publisher killed (-9), the distributor killed (-9) or stopped
(SIGSTOP). `standby-publisher-kill` is the other design: one distributor with two sources of the
service (ranks 1 and 2, the second a standby publisher there), and the rank 1 source killed (-9);
the distributor moves the items, so the server and the client see only its refreshes (for items
whose values differ) under the same item ids. A failover at the server keeps the item ids too
(the items follow the standby's): again a refresh only where the values differ. The cut-over is
the time from just before the signal to the last item on the standby: the later of the client's
read of the last refresh and the end of the switch (the server's, from its /metrics; the
distributor's, from its log), for the items sent nothing. Each read from the socket is
timestamped as it returns and the frames are parsed only after the window, so parsing never
delays a timestamp. The standby's image requests (its /metrics) are read before and after: a
hot switch asks none."""
import os
import random
import re
import signal
import socket
import struct
import time

from bench_stack import Process, free_port, merge_config, wait_for_port
from scale_probe import admin_port, metric

FRAME = struct.Struct(">IHH")
LOGIN_REQUEST, REFRESH, SUBSCRIBE = 1, 20, 31
NAMES_PER_REQUEST = 4000  # a subscribe frame of 4,000 "ITEM000000" names fits 64 KiB
FAILURES = ("publisher-kill", "distributor-kill", "distributor-stop", "standby-publisher-kill")
SECRET = "cutover-standby-secret-0123456789"


def add_arguments(parser):
    group = parser.add_argument_group("cutover scenario")
    group.add_argument("--cutover-items", default="1000,100000", help="item counts to measure")
    group.add_argument("--cutover-failures", default=",".join(FAILURES),
                       help="failures of the active side to measure")
    group.add_argument("--cutover-repeat", type=int, default=3, help="runs of each point (median and worst shown)")
    group.add_argument("--cutover-silent-ms", type=int, default=1000,
                       help="the server's backbone.source_silent_ms (how soon a silent distributor is blamed)")
    group.add_argument("--cutover-rate", type=int, default=2000, help="updates/s of each source")


def varint(n):
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def field(number, text):
    data = text.encode()
    return varint(number << 3 | 2) + varint(len(data)) + data


def frame(kind, body):
    return FRAME.pack(len(body), kind, 0) + body


def read_varint(data, pos):
    value = shift = 0
    while True:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            return value, pos
        shift += 7


class Reader:
    """A logged-in connection subscribed to `names`; read_for() keeps (monotonic time, bytes)."""

    def __init__(self, port, names):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        out = frame(LOGIN_REQUEST, field(1, "cutover") + field(2, "mdcast-bench-cutover"))
        for start in range(0, len(names), NAMES_PER_REQUEST):
            body = field(2, "MDCAST") + b"".join(field(3, n) for n in names[start:start + NAMES_PER_REQUEST])
            out += frame(SUBSCRIBE, body)
        self.sock.sendall(out)
        self.chunks = []
        self.pending = b""

    def read_for(self, seconds):
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(1 << 20)
            except socket.timeout:
                return
            if not data:
                return
            self.chunks.append((time.monotonic(), data))

    def refreshes(self):
        """(time read, item id) of every refresh in what was read, in order; then forgets it."""
        found = []
        data = self.pending
        for stamp, chunk in self.chunks:
            data += chunk
            pos = 0
            while len(data) - pos >= FRAME.size:
                length, kind, _ = FRAME.unpack_from(data, pos)
                end = pos + FRAME.size + length
                if end > len(data):
                    break
                if kind == REFRESH and length and data[pos + FRAME.size] == 0x08:  # field 1: item_id
                    found.append((stamp, read_varint(data, pos + FRAME.size + 1)[0]))
                pos = end
            data = data[pos:]
        self.pending, self.chunks = data, []
        return found


class PairStack:
    """Distributors 1 and 2 with a source each, one server; every process stopped by PID."""

    def __init__(self, runner, log_dir):
        self.bin, self.profiles, self.log_dir, self.commands, self.processes = runner.bin, runner.profiles, log_dir, [], []
        os.makedirs(log_dir, exist_ok=True)

    def start_all(self, items, silent_ms, rate, standby_publisher=False):
        if standby_publisher:
            return self.start_one(items, rate)
        profile = os.path.join(self.profiles, "latency")
        group = f"239.255.{random.randint(1, 254)}.{random.randint(1, 254)}"
        backbone = free_port(socket.SOCK_DGRAM)
        self.publisher_ports, self.distributors, self.sources = {}, {}, {}
        for n in (1, 2):
            self.publisher_ports[n] = free_port()
            cfg = self.config(profile, "distributor", f"distributor{n}", {
                "distributor.id": n, "publishers.port": self.publisher_ports[n], "backbone.group": group,
                "backbone.port": backbone, "backbone.interface": "127.0.0.1", "backbone.ttl": 0, "admin.port": 0})
            self.distributors[n] = self.start(f"distributor{n}", [self.bin["distributor"], "--config", cfg])
            wait_for_port(self.publisher_ports[n], self.distributors[n])
        self.start_server(profile, group, backbone, silent_ms)
        for n in (1, 2):  # 1 first: it is active from the start, 2 the standby
            self.sources[n] = self.start(f"source{n}", [
                self.bin["source"], "--distributor", f"127.0.0.1:{self.publisher_ports[n]}", "--items", str(items),
                "--rate", str(rate), "--duration", "0"])
            self.sources[n].wait_for_log("items registered", 120)
            self.server.wait_for_log(f"({n << 16 | 1}) is up", 30)

    def start_one(self, items, rate):
        """One distributor, its sources of ranks 1 (active) and 2 (the standby publisher)."""
        profile = os.path.join(self.profiles, "latency")
        group = f"239.255.{random.randint(1, 254)}.{random.randint(1, 254)}"
        backbone = free_port(socket.SOCK_DGRAM)
        secret = os.path.join(self.log_dir, "takeover.secret")
        with open(secret, "w") as f:
            f.write(SECRET + "\n")
        port = free_port()
        self.publisher_ports, self.sources = {1: port, 2: port}, {}
        cfg = self.config(profile, "distributor", "distributor1", {
            "distributor.id": 1, "publishers.port": port, "backbone.group": group, "backbone.port": backbone,
            "backbone.interface": "127.0.0.1", "backbone.ttl": 0, "admin.port": 0,
            "publishers.takeover_secret_file": secret, "publishers.standby_hold_down_ms": 3_600_000})
        self.distributors = {1: self.start("distributor1", [self.bin["distributor"], "--config", cfg])}
        self.distributors[2] = self.distributors[1]  # the standby's images are kept there too
        wait_for_port(port, self.distributors[1])
        self.start_server(profile, group, backbone, 1000)
        for n in (1, 2):
            self.sources[n] = self.start(f"source{n}", [
                self.bin["source"], "--distributor", f"127.0.0.1:{port}", "--items", str(items),
                "--rate", str(rate), "--duration", "0", "--standby-rank", str(n), "--takeover-secret-file", secret])
            self.sources[n].wait_for_log("items registered", 120)
        self.server.wait_for_log(f"({1 << 16 | 1}) is up", 30)

    def start_server(self, profile, group, backbone, silent_ms):
        self.client_port = free_port()
        cfg = self.config(profile, "server", "server", {
            "clients.port": self.client_port, "backbone.group": group, "backbone.port": backbone,
            "backbone.interface": "127.0.0.1", "backbone.source_silent_ms": silent_ms, "admin.port": 0,
            "redundancy.hold_down_ms": 3_600_000,
            # A switch sends every subscribed item's refresh at once: room for 100,000 of them.
            "output.max_bytes": 64 << 20, "output.expected_clients": 2,
            "clients.idle_timeout_ms": 0})  # the raw client sends no heartbeats
        self.server = self.start("server", [self.bin["server"], "--config", cfg])
        wait_for_port(self.client_port, self.server)

    def config(self, profile, kind, name, overrides):
        with open(os.path.join(profile, kind + ".yaml")) as f:
            text = merge_config(f.read(), overrides)
        path = os.path.join(self.log_dir, name + ".yaml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def start(self, name, argv):
        p = Process(name, argv, self.log_dir, self.commands)
        self.processes.append(p)
        return p

    def stop(self):
        for p in reversed(self.processes):
            if p.running():
                os.kill(p.pid, signal.SIGCONT)  # a stopped distributor must hear SIGTERM
            p.stop()


def fail(stack, failure):
    target = stack.sources[1] if failure.endswith("publisher-kill") else stack.distributors[1]
    sig = signal.SIGSTOP if failure == "distributor-stop" else signal.SIGKILL
    start, start_unix = time.monotonic(), time.time()
    os.kill(target.pid, sig)
    return start, start_unix


def first_images(reader, items, timeout=120):
    """Reads until every item's first image came; False if they did not within `timeout`."""
    seen = set()
    deadline = time.monotonic() + timeout
    while len(seen) < items and time.monotonic() < deadline:
        reader.read_for(0.2)
        seen |= {item_id for _, item_id in reader.refreshes()}
    reader.read_for(0.5)
    reader.refreshes()
    return len(seen) >= items


def standby_current(port, items, members=2, timeout=60):
    """Until the server caches both members' items, none of them suspect (a burst of images at
    start-up may have cost backbone loss that is being repaired)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if metric(port, "mdcast_server_items") >= members * items and \
                metric(port, "mdcast_server_items_suspect", 1) == 0:
            return True
        time.sleep(0.2)
    return False


def measure(runner, items, failure, args):
    names = [f"ITEM{i:06d}" for i in range(items)]
    log_dir = os.path.join(runner.out, f"cutover-{items}-{failure}")
    stack = PairStack(runner, log_dir)
    try:
        one = failure == "standby-publisher-kill"
        stack.start_all(items, args.cutover_silent_ms, args.cutover_rate, standby_publisher=one)
        if not standby_current(admin_port(stack.server), items, 1 if one else 2):
            return {"items": items, "failure": failure, "error": "both members' images not all current within 60 s"}
        reader = Reader(stack.client_port, names)
        if not first_images(reader, items):
            return {"items": items, "failure": failure, "error": "not every first image within 120 s"}
        standby_port = admin_port(stack.distributors[2])
        requests_before = metric(standby_port, "mdcast_distributor_image_requests_total")
        if one:
            return measure_standby_publisher(stack, reader, items, failure, requests_before)
        server_port = admin_port(stack.server)
        unchanged_before = metric(server_port, "mdcast_server_redundancy_items_unchanged_total")
        start, start_unix = fail(stack, failure)
        silence = args.cutover_silent_ms / 1000 if failure != "publisher-kill" else 0
        reader.read_for(1.0 + silence + items / 20_000)
        # A failover keeps each item's id: the refreshes read are the items whose values
        # differed; the others were sent nothing, and are the standby's once the server's
        # switch has passed them (its end, in Unix time, on /metrics).
        switched = {}
        for stamp, item_id in reader.refreshes():
            switched.setdefault(item_id, stamp)
        requests = metric(standby_port, "mdcast_distributor_image_requests_total") - requests_before
        moved = re.findall(r"moved from distributor 1 to distributor 2 \((\w+)\)", stack.server.log_text())
        done = metric(server_port, "mdcast_server_redundancy_last_switch_done_timestamp_seconds")
        result = {"items": items, "failure": failure, "switched": len(switched),
                  "unchanged": int(metric(server_port, "mdcast_server_redundancy_items_unchanged_total")
                                   - unchanged_before),
                  "image_requests": int(requests), "reason": moved[0] if moved else "none"}
        stamps = sorted((s - start) * 1000 for s in switched.values())
        if done:
            result["server_ms"] = (done - start_unix) * 1000
            stamps = sorted(stamps + [result["server_ms"]])
        if stamps:
            result["first_ms"], result["last_ms"] = stamps[0], stamps[-1]
        return result
    finally:
        stack.stop()


def measure_standby_publisher(stack, reader, items, failure, requests_before):
    """The rank 1 source killed: every item the standby's values differ for gets one refresh (the
    same item id); the others nothing. The last refresh read is the cut-over; the distributor's
    log says how long the switch itself took there."""
    port = admin_port(stack.distributors[1])
    start, _ = fail(stack, failure)
    reader.read_for(1.0 + items / 20_000)
    switched = {}
    for stamp, item_id in reader.refreshes():
        switched.setdefault(item_id, stamp)
    took = re.findall(r"without an image there \(([\d.]+) ms\)", stack.distributors[1].log_text())
    result = {"items": items, "failure": failure, "switched": len(switched),
              "unchanged": int(metric(port, "mdcast_distributor_standby_items_unchanged_total")),
              "image_requests": int(metric(port, "mdcast_distributor_image_requests_total") - requests_before),
              "reason": "publisher_gone" if took else "none"}
    if took:
        result["distributor_ms"] = float(took[0])
    if switched:
        stamps = sorted(switched.values())
        result["first_ms"] = (stamps[0] - start) * 1000
        result["last_ms"] = (stamps[-1] - start) * 1000
    return result


def run(runner, args):
    results = []
    for items in [int(x) for x in args.cutover_items.split(",") if x]:
        for failure in [f for f in args.cutover_failures.split(",") if f]:
            if failure not in FAILURES:
                raise SystemExit(f"mdcast-bench: unknown failure {failure} (one of {', '.join(FAILURES)})")
            for attempt in range(args.cutover_repeat):
                print(f"  {items} items, {failure} ({attempt + 1}/{args.cutover_repeat}) ...", end="", flush=True)
                result = measure(runner, items, failure, args)
                result["attempt"] = attempt
                print(" " + row_text(result), flush=True)
                results.append(result)
    return results


def row_text(r):
    if "error" in r:
        return r["error"]
    if "last_ms" not in r:
        return f"no item switched ({r['reason']})"
    unchanged = ""
    if "distributor_ms" in r:
        unchanged = f" + {r['unchanged']:,} unchanged, switched in {r['distributor_ms']:.1f} ms at the distributor"
    elif "server_ms" in r:
        unchanged = (f" + {r['unchanged']:,} unchanged (nothing sent), the server's switch done "
                     f"{r['server_ms']:.1f} ms after the failure")
    return (f"{r['switched']:,}/{r['items']:,} switched{unchanged} ({r['reason']}), first {r['first_ms']:.1f} ms, "
            f"last {r['last_ms']:.1f} ms, {r['image_requests']} image requests")


def summary(results):
    """Per (items, failure): runs, median and worst of the last item's time, image requests."""
    rows = {}
    for r in results:
        rows.setdefault((r["items"], r["failure"]), []).append(r)
    for (items, failure), runs in rows.items():
        good = sorted((r for r in runs if r.get("switched", 0) + r.get("unchanged", 0) == items and "last_ms" in r),
                      key=lambda r: r["last_ms"])
        yield items, failure, runs, good


def write(results, out_dir, header, silent_ms):
    lines = header + [
        "## Cut-over", "",
        f"From the signal to the last item on the standby: the later of the client's read of the last "
        f"refresh (items whose values differed) and the end of the switch (items sent nothing: the server's "
        f"or the distributor's), median and worst of the runs that switched every item; "
        f"backbone.source_silent_ms {silent_ms}. Image requests: those the standby distributor answered in "
        f"the window.", "",
        "| items | failure | reason | runs (all switched) | last item, median (ms) | worst (ms) | image requests |",
        "|---|---|---|---|---|---|---|"]
    for items, failure, runs, good in summary(results):
        reason = ", ".join(sorted({r.get("reason", "") for r in runs}))
        median = f"{good[len(good) // 2]['last_ms']:.1f}" if good else "-"
        worst = f"{good[-1]['last_ms']:.1f}" if good else "-"
        requests = max((r.get("image_requests", 0) for r in runs), default=0)
        lines.append(f"| {items:,} | {failure} | {reason} | {len(runs)} ({len(good)}) | {median} | {worst} | "
                     f"{requests} |")
    lines += ["", "Every run:", ""] + [f"- {r['items']:,} items, {r['failure']}: {row_text(r)}" for r in results]
    path = os.path.join(out_dir, "report.md")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"report: {path}")
    return 0
