"""Running one benchmark point (a stack at one rate, size and shape) and judging it."""
import csv
import os
import time
from dataclasses import dataclass, field

import bench_breakdown
from bench_stack import BENCH_MAX_CONNECTIONS, Stack, coalescing_us, machine_cpu_times, pin_cpus

# The stop rule: a mean latency over 10 ms, on top of what the profile's coalescing adds by design.
MEAN_LIMIT_US = 10_000


@dataclass
class Point:
    scenario: str
    profile: str
    rate: int
    update_bytes: int = 74
    items: int = 1000
    servers: int = 1
    connections: int = 1
    client_processes: int = 1
    warmup_s: float = 1.0
    seconds: float = 5.0
    latency_rate: int = 0  # 0: stamp every update
    tick_us: int = 100     # the source's pacing tick (mdcast-bench --tick-us)
    tls: bool = False      # clients over TLS (mdcast-bench --tls)
    client: str = "sdk"    # sdk: the SDK Consumer (mdcast-bench-consumer); lean: mdcast-client;
    #                        ws: WebSocket/JSON (mdcast-bench-ws-consumer)
    source: str = "sdk"    # sdk: the SDK Publisher (mdcast-bench-publisher); lean: mdcast-source;
    #                        interactive: mdcast-source --interactive (sink-driven)
    plain_updates: bool = False  # sdk source: plain update() calls, no Batch per tick (--plain-updates)
    pin: bool = False      # daemons on the first core, client processes on the others
    realtime: bool = False  # SCHED_FIFO: daemons at 55, client processes at 49 (--realtime)
    sdk_io_threads: int = 1  # sdk client: IoContexts per process (0: a thread per Consumer)
    sched_slice_us: int = 0  # daemons' process.sched_slice_us, SDK programs' --sched-slice-us
    busy_poll_us: int = 0    # daemons' and SDK consumers' busy-poll idle strategy (--busy-poll-us)
    # ws client, mdcast-bench --ws-conflate-ms: None: off; N: the servers stamp JSON messages
    # (clients.ws_publish_time) and, N > 0, every request asks for TimeConflated at N ms.
    ws_conflate_ms: int = None
    replay: dict = None    # mdcast-bench --replay: the capture (mdcast_bench.replay_load)
    # mdcast-bench books: "MIN:MAX" levels of MarketByPrice books the SDK source publishes and
    # the SDK clients read (--book-levels, --books); empty: field lists.
    book_levels: str = ""
    # Filled in by run_point:
    result: dict = field(default_factory=dict)

    def label(self):
        size = f"books{self.book_levels.replace(':', '-')}" if self.book_levels else f"{self.update_bytes}B"
        return (f"{self.scenario}-{self.profile}-{self.rate}ups-{size}-"
                f"{self.servers}srv-{self.connections}conn" + ("-tls" if self.tls else "") + f"-{self.client}"
                + (f"-conflate{self.ws_conflate_ms}ms" if self.ws_age() else ""))

    def ws_age(self):
        """True when WebSocket clients measure the age of what they show (--ws-conflate-ms)."""
        return self.client == "ws" and self.ws_conflate_ms is not None


def split_connections(total, processes):
    base, extra = divmod(total, processes)
    return [base + (1 if i < extra else 0) for i in range(processes) if base + (1 if i < extra else 0) > 0]


def read_intervals(path):
    try:
        with open(path) as f:
            return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]
    except OSError:
        return []


def lag_growing(intervals, warmup_s):
    """True when the interval mean latency grows through the steady window: the last
    third's mean is over twice the first third's plus 1 ms."""
    steady = [r for r in intervals if r["elapsed_s"] > warmup_s + 0.01 and r["latency_count"] > 0]
    if len(steady) < 3:
        return False
    third = max(1, len(steady) // 3)
    first = sum(r["latency_mean_us"] for r in steady[:third]) / third
    last = sum(r["latency_mean_us"] for r in steady[-third:]) / third
    return last > 2 * first + 1000


def run_point(point, binaries, profiles_dir, out_dir):
    """Runs the point's stack and fills point.result. Never raises for a failed run:
    a stack that does not start is a failed point with the reason."""
    log_dir = os.path.join(out_dir, "logs", point.label())
    started = time.monotonic()
    try:
        profile_dir = os.path.join(profiles_dir, point.profile)
        point.result["mean_limit_us"] = MEAN_LIMIT_US + coalescing_us(profile_dir)
        if point.scenario == "latency":  # the floor beside the point, before its stack starts
            point.result["floor"] = bench_breakdown.wakeup_floor(
                binaries["wakeup-probe"], lambda role: pin_cpus(role) if point.pin else None)
        with Stack(binaries, profile_dir, log_dir, tls=point.tls, client=point.client, source=point.source,
                   pin=point.pin, realtime=point.realtime, sdk_io_threads=point.sdk_io_threads,
                   sched_slice_us=point.sched_slice_us, busy_poll_us=point.busy_poll_us,
                   ws_conflate_ms=point.ws_conflate_ms if point.ws_age() else None) as stack:
            _run(point, stack, log_dir)
            point.result["commands"] = list(stack.commands)
    except (RuntimeError, OSError, ValueError) as error:
        point.result.setdefault("failures", []).append(f"run failed: {str(error).splitlines()[0]}")
    point.result["wall_s"] = time.monotonic() - started
    point.result["passed"] = not point.result.get("failures")
    return point


# --replay: the clients subscribe during the replay's start delay, which the warm-up covers;
# the steady window ends half a second before the capture does.
REPLAY_START_DELAY_S = 1.0
# mdcast-bench-ws-consumer opens its connections one after the other before its warm-up starts.
WS_SETUP_TIMEOUT_S = 120


def start_source(point, stack):
    if point.replay:
        r = point.replay
        point.seconds = min(point.seconds, max(0.5, r["span_s"] - point.warmup_s - 0.5))
        point.warmup_s += REPLAY_START_DELAY_S
        source = stack.replay(r["file"], "--speed", r["speed"], "--images-first", "--start-delay",
                              REPLAY_START_DELAY_S, "--tick-us", max(point.tick_us, 1000))
        return source, ["--service", r["service"], "--item-prefix", r["prefix"]]
    # The WebSocket clients' warm-up starts once their connections are open, which takes seconds
    # with thousands of them: the source, stopped by PID after the clients anyway, outlasts that.
    setup_s = WS_SETUP_TIMEOUT_S if point.client == "ws" else 0
    source_args = ["--items", point.items, "--rate", point.rate,
                   "--duration", point.warmup_s + point.seconds + 3 + setup_s, "--update-bytes", point.update_bytes,
                   "--tick-us", point.tick_us, "--max-batch", max(10_000, point.rate * point.tick_us // 50_000)]
    if point.latency_rate:
        source_args += ["--latency-rate", point.latency_rate]
    if point.plain_updates and point.source == "sdk":
        source_args.append("--unbatched")
    if point.book_levels:
        source_args += ["--book-levels", point.book_levels]
    return stack.source(*source_args), []


def connection_limit(point):
    """The servers' clients.max_connections: the bench's 1000, raised (and said) when a point
    puts more client connections on one server instance."""
    per_server = -(-point.connections // point.servers)
    if per_server <= BENCH_MAX_CONNECTIONS:
        return {}
    point.result.setdefault("notes", []).append(
        f"clients.max_connections raised from {BENCH_MAX_CONNECTIONS} to {per_server} "
        f"({point.connections} connections on {point.servers} server instance(s))")
    return {"clients.max_connections": per_server}


def _run(point, stack, log_dir):
    stack.start_core(point.servers, server_overrides=connection_limit(point))
    source, item_args = start_source(point, stack)
    # Interactive: nothing is registered before the clients ask; the images are part of the warm-up.
    source.wait_for_log("announced as interactive" if point.source == "interactive" else "items registered", 60)
    interval = max(0.25, min(1.0, point.seconds / 6))
    if point.book_levels:
        item_args = [*item_args, "--books"]
    clients = []
    for i, n in enumerate(split_connections(point.connections, point.client_processes)):
        csv_path = os.path.join(log_dir, f"client{i}.csv")
        clients.append((stack.client(f"client{i}", "--connections", n, "--item-count", point.items, *item_args,
                                     "--output", "none", "--duration", point.warmup_s + point.seconds,
                                     "--warmup", point.warmup_s, "--stats-interval", interval,
                                     "--csv", csv_path), n, csv_path))
    if point.client == "ws":  # the window must be the clients' window, not their handshakes'
        for client, _, _ in clients:
            client.wait_for_log("connections open", WS_SETUP_TIMEOUT_S)
    time.sleep(point.warmup_s)
    everyone = stack.processes
    stages = _scrape_stages(stack)
    window_start = time.monotonic()
    machine_start = machine_cpu_times()
    for p in everyone:
        p.mark_cpu("start")
    time.sleep(max(0.1, point.seconds - 0.3))
    for p in everyone:
        p.mark_cpu("end")
    machine_end = machine_cpu_times()
    window = time.monotonic() - window_start
    point.result["stage_scrapes"] = (stages, _scrape_stages(stack))
    total = machine_end[2] - machine_start[2]
    if total > 0:
        # All cores together, 100 % = every core busy; softirq is loopback network work that
        # no process's own CPU time shows.
        point.result["machine_cpu_percent"] = 100.0 * (machine_end[0] - machine_start[0]) / total
        point.result["softirq_percent"] = 100.0 * (machine_end[1] - machine_start[1]) / total
    for client, _, _ in clients:
        client.wait(timeout=point.seconds + 30)
    source.terminate()  # it was given slack to outlast the clients; its summary covers the whole run
    _collect(point, stack, source, clients, window)


def _scrape_stages(stack):
    """The daemons' hop histograms now: {"distributor": [...], "server": [one per instance]}."""
    ports = stack.admin_ports()
    return {"distributor": [bench_breakdown.scrape(ports["distributor"])],
            "server": [bench_breakdown.scrape(port) for port in ports["servers"]]}


def _cpu_percent(process, window, marks=None):
    marks = process.cpu_marks if marks is None else marks
    if "start" in marks and "end" in marks and window > 0:
        return 100.0 * (marks["end"] - marks["start"]) / window
    return None


def _collect(point, stack, source, clients, window):
    r = point.result
    failures = r.setdefault("failures", [])
    sent = source.json_line("source_summary", "out")
    if sent is None:
        failures.append("source printed no summary")
        return
    r["source"] = sent
    summaries = []
    for client, connections, csv_path in clients:
        s = client.json_line("summary", "log")
        if s is None:
            last = (client.log_text().strip().splitlines() or ["(no output)"])[-1]
            failures.append(f"{client.name} printed no summary (exit {client.popen.poll()}): {last[:300]}")
            continue
        s["intervals"] = read_intervals(csv_path)
        summaries.append(s)
    if not summaries:
        return
    r["clients"] = summaries
    r["cpu_percent"] = {p.name: _cpu_percent(p, window) for p in stack.processes}
    steady_s = min(s["steady_s"] for s in summaries)
    r["inbound_per_s"] = sent["updates_per_s"]
    r["outbound_per_s"] = sum(s["steady_updates_per_s"] for s in summaries)
    # None when the clients measured none (WebSocket/JSON carries no publish stamp).
    r["latency"] = max((s["latency_us"] for s in summaries if s["latency_us"]["count"]),
                       key=lambda l: l["mean"], default=None)
    r["startup_latency"] = max((s["startup_latency_us"] for s in summaries if s["startup_latency_us"]["count"]),
                               key=lambda l: l["mean"], default=None)
    r["image_time_s"] = max(s["image_time_s"] for s in summaries)
    r["images_per_s"] = min(s["images_per_s"] for s in summaries)
    server_cpu = sum(r["cpu_percent"].get(p.name) or 0 for p in stack.servers)
    r["server_cpu_percent"] = server_cpu
    # Runnable but waiting for a CPU, % of the window: a server short of updates with CPU to
    # spare is stalled; one that waited for a CPU was starved by the machine.
    r["server_wait_percent"] = max((_cpu_percent(p, window, p.wait_marks) or 0 for p in stack.servers),
                                   default=None)
    r["updates_per_server_cpu_s"] = r["outbound_per_s"] / (server_cpu / 100) if server_cpu > 0 else None
    r["cpu_us_per_update"] = cpu_per_update(r, stack)
    if point.ws_age():
        r["ws_age"] = ws_age(summaries, steady_s)
    if r.get("latency") and "stage_scrapes" in r:
        r["breakdown"] = bench_breakdown.breakdown(*r.pop("stage_scrapes"), r["latency"]["mean"])
    _judge(point, sent, summaries, steady_s)


def ws_age(summaries, steady_s):
    """--ws-conflate-ms: the age of what the WebSocket clients show (now - PublishTime at receipt,
    the worst client process's percentiles: histograms are not merged across processes) and what
    the conflated updates stand for."""
    ages = [s["latency_us"] for s in summaries if s["latency_us"]["count"]]
    worst = {k: max((a[k] for a in ages), default=None) for k in ("p50", "p99", "p99_9", "max")}
    represented = sum(s.get("steady_represented", 0) for s in summaries)
    return {**{f"age_{k}_us": v for k, v in worst.items()}, "aged": sum(a["count"] for a in ages),
            "conflated": sum(s["conflated"] for s in summaries),
            "stands_for": sum(s.get("stands_for", 0) for s in summaries),
            "represented": represented, "represented_per_s": represented / steady_s if steady_s > 0 else None}


def cpu_per_update(r, stack):
    """µs of CPU per update (= CPU-s per million updates) of each process kind over the steady
    window: source and distributor per update published, servers and clients per update
    delivered to a client."""
    cpu = r["cpu_percent"]

    def per(percent, rate):
        return 1e6 * percent / 100 / rate if percent is not None and rate else None
    clients = [v for k, v in cpu.items() if k.startswith("client") and v is not None]
    return {"source": per(cpu.get("source"), r["inbound_per_s"]),
            "distributor": per(cpu.get("distributor"), r["inbound_per_s"]),
            "server": per(r["server_cpu_percent"], r["outbound_per_s"]),
            "client": per(sum(clients) if clients else None, r["outbound_per_s"])}


def _judge(point, sent, summaries, steady_s):
    r = point.result
    failures = r["failures"]
    gaps = sum(s["gaps"] for s in summaries)
    duplicates = sum(s["duplicates"] for s in summaries)
    closed = sum(s["closed"] for s in summaries)
    errors = sum(s.get("errors", 0) for s in summaries)  # the WebSocket client's: see its log
    if errors:
        failures.append(f"{errors} errors reported by the clients (unreadable or Error messages, refused "
                        "requests, updates before their Refresh)")
    if gaps or duplicates:
        failures.append(f"loss: {gaps} gaps ({sum(s['missing'] for s in summaries)} missing), {duplicates} duplicates")
    if closed:
        failures.append(f"{closed} client connections closed by the server")
    if sent["capped_ticks"] > 0 or sent["shortfall"] > 0.01 * max(1, sent["sent"]):
        failures.append(f"source could not keep {point.rate}/s (sent {sent['updates_per_s']:.0f}/s)")
    expected = point.rate * steady_s * point.connections
    # Conflated: each Update stands for the published updates it merged.
    got = r["ws_age"]["represented"] if point.ws_age() else sum(s["steady_updates"] for s in summaries)
    if expected > 0 and got < 0.97 * expected:
        failures.append(f"clients received {100 * got / expected:.1f}% of the updates due in the window")
    limit = r["mean_limit_us"]
    if point.scenario != "fanout" and r["latency"] and r["latency"]["mean"] > limit:
        failures.append(f"mean latency {r['latency']['mean'] / 1000:.1f} ms > {limit / 1000:g} ms")
    if any(lag_growing(s["intervals"], point.warmup_s) for s in summaries):
        failures.append("lag growing through the run")
