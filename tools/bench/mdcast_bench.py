#!/usr/bin/env python3
"""mdcast-bench: runs the seed's benchmark tables on a local mdcast stack.

Scenarios (see docs/benchmarks.md):
  latency  seed Tables 2-5: 74-byte updates, 1,000 items, one server, one client, rates
           1K..1M/s, latency and throughput profiles; stops at the first rate that loses
           data, falls behind or averages over 10 ms.
  fanout   seed Table 1 ("Producer 50/50"): 1,000 items, N connections all subscribed to
           every item, 1 and 2 server instances, throughput profile (--fanout-profile); raises the inbound rate
           until loss or growing lag.
  sizes    the LBM tables: 64..1024-byte updates at a few rates.
  quick    a 20-30 s subset of all three, for the README's main command.
  scale    the scale envelope: items, services, subscriptions, connections, images/s at
           subscribe and recovery after a distributor restart, each held or refused loudly.
  cutover  redundant sources: time from a failure of the active distributor or publisher to
           the last item served by the hot standby, for 1,000 and 100,000 items.
  post     the post round trip (a Consumer's post to the SDK Publisher and its answer)
           against the update latency at 1K/s (--rates: another rate; --post-rate).
  publisher the most updates/s the SDK Publisher gets into a distributor: plain update()
           calls, Publisher::Batch, plain calls written by the I/O thread only.
  cascade  an edge server fed over TCP by the hub: the latency the hop adds, the updates/s
           one link carries, the resync after an outage (--cascade-*; bench_cascade.py).
  books    MarketByPrice books beside field lists in the same run: updates/s out of one
           server at 10 and 50 connections, latency at 1K and 100K/s (--book-*;
           bench_books.py).

Each point starts its own distributor, servers, source and clients from the built
binaries on loopback with private ports and a random 239.255.x.y group, and stops them
by PID. Writes reports/<timestamp>/report.md, CSV files and PNG charts."""
import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_books  # noqa: E402
import bench_cascade  # noqa: E402
import bench_cutover  # noqa: E402
import bench_post  # noqa: E402
import bench_publisher  # noqa: E402
import bench_report as report  # noqa: E402
import bench_scale  # noqa: E402
import bench_ws_age  # noqa: E402
import seed_figures as seed  # noqa: E402
from bench_points import Point, run_point  # noqa: E402

LATENCY_RATES = [1_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 750_000, 1_000_000]
FANOUT_RATES = [5_000, 10_000, 20_000, 30_000, 50_000, 70_000, 100_000, 150_000, 200_000, 300_000, 500_000]
SIZES = [64, 128, 256, 512, 1024]
SIZE_RATES = [10_000, 100_000, 500_000]


def parse_args(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(prog="mdcast-bench", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("scenario", choices=["latency", "fanout", "sizes", "quick", "all", "scale", "cutover", "post",
                                             "publisher", "cascade", "books"])
    parser.add_argument("--build-dir", default=os.path.join(here, "../../build"),
                        help="where the binaries were built (default: the source tree's build/)")
    parser.add_argument("--source-dir", default=os.path.join(here, "../.."),
                        help="the mdcast source tree (profiles in etc/profiles)")
    parser.add_argument("--out", default="reports", help="reports directory (default: ./reports)")
    parser.add_argument("--seconds", type=float, help="steady-state seconds per point")
    parser.add_argument("--warmup", type=float, help="start-up seconds per point, not in the tables")
    parser.add_argument("--rates", help="comma-separated updates/s, instead of the scenario's ladder")
    parser.add_argument("--profiles", default="latency,throughput", help="latency scenario profiles")
    parser.add_argument("--connections", type=int, default=50, help="fanout: client connections")
    parser.add_argument("--fanout-profile", choices=["throughput", "latency"], default="throughput",
                        help="fanout: the daemons' profile (default throughput, as the seed's Table 1)")
    parser.add_argument("--tls", action="store_true",
                        help="clients connect over TLS (a throw-away CA and server certificate per run)")
    parser.add_argument("--client-processes", type=int, default=2, help="fanout: mdcast-client processes")
    parser.add_argument("--servers", default="1,2", help="fanout: server instance counts")
    parser.add_argument("--tick-us", type=int, default=100,
                        help="the source's pacing tick in µs (default 100: see docs/benchmarks.md)")
    parser.add_argument("--latency-rate", type=int, default=0,
                        help="stamps per second (0: every update is stamped)")
    parser.add_argument("--client", default="sdk",
                        help="sdk (default): mdcast-bench-consumer, SDK Consumers as applications use "
                             "them, reading two fields of each update; lean: mdcast-client, which "
                             "decodes only each update's header; ws (fanout only): "
                             "mdcast-bench-ws-consumer, WebSocket/JSON connections to the servers' "
                             "clients.ws_port (docs/websocket.md). Fanout: several, comma-separated "
                             "(lean,ws), run one after the other into the same tables")
    parser.add_argument("--source", choices=["sdk", "lean"], default="sdk",
                        help="sdk (default): mdcast-bench-publisher, the SDK Publisher; lean: "
                             "mdcast-source, which writes pre-encoded frames")
    parser.add_argument("--plain-updates", action="store_true",
                        help="--source sdk: each update a plain Publisher::update() call, without the "
                             "Publisher::Batch per tick (mdcast-bench-publisher --unbatched): the natural "
                             "batching of plain calls")
    parser.add_argument("--replay", metavar="FILE",
                        help="load from a capture (mdcast-capture) published by mdcast-replay instead of "
                             "generated updates: each point runs at the capture's rate times --replay-speed")
    parser.add_argument("--replay-speed", type=float, default=1.0,
                        help="--replay: N times the recorded speed (default 1)")
    parser.add_argument("--source-mode", choices=["broadcast", "interactive"], default="broadcast",
                        help="broadcast (default): the source registers and images every item before the "
                             "clients start; interactive: the seed's set-up, mdcast-source --interactive "
                             "(the SDK Publisher) answers the clients' item requests and publishes only "
                             "what was requested (--source is then ignored)")
    parser.add_argument("--pin", action="store_true",
                        help="pin the daemons (distributor, servers) to the first core and the client "
                             "processes (source, clients) to the other cores")
    parser.add_argument("--realtime", action="store_true",
                        help="run the daemons under SCHED_FIFO priority 55 and the source and clients at 49, "
                             "the seed reports' `chrt -f` set-up and deploy/*.service.d/10-realtime.conf.example "
                             "(needs root or CAP_SYS_NICE)")
    parser.add_argument("--sdk-io-threads", type=int, default=1,
                        help="--client sdk: I/O threads (mdcast::IoContext) each client process shares "
                             "between its Consumers (default 1); 0: each Consumer its own thread, the "
                             "SDK's default without an IoContext")
    parser.add_argument("--sched-slice-us", type=int, default=0,
                        help="scheduler slice in µs (Linux 6.12+, 100..100000): the daemons' "
                             "process.sched_slice_us and the SDK programs' mdcast::set_sched_slice; "
                             "0 (default): the kernel's")
    parser.add_argument("--busy-poll-us", type=int, default=0,
                        help="the opt-in spinning mode for dedicated cores: the distributor "
                             "(distributor.busy_poll_us), the servers (backbone.busy_poll_us) and the SDK "
                             "client (ConsumerOptions::busy_poll_us) poll this long without sleeping after "
                             "their last input (0, default: off)")
    parser.add_argument("--latency-connections", type=int, default=1,
                        help="latency and sizes scenarios: client connections (default 1)")
    bench_ws_age.add_arguments(parser)
    bench_scale.add_arguments(parser)
    bench_cutover.add_arguments(parser)
    bench_post.add_arguments(parser)
    bench_publisher.add_arguments(parser)
    bench_cascade.add_arguments(parser)
    bench_books.add_arguments(parser)
    return parser.parse_args(argv)


def binaries(build_dir):
    found = {"distributor": os.path.join(build_dir, "distributor/mdcast-distributor"),
             "server": os.path.join(build_dir, "server/mdcast-server"),
             "source": os.path.join(build_dir, "tools/mdcast-source"),
             "client": os.path.join(build_dir, "tools/mdcast-client"),
             "sdk-source": os.path.join(build_dir, "tools/mdcast-bench-publisher"),
             "sdk-client": os.path.join(build_dir, "tools/mdcast-bench-consumer"),
             "poster": os.path.join(build_dir, "tools/mdcast-bench-poster"),
             "ws-client": os.path.join(build_dir, "tools/mdcast-bench-ws-consumer"),
             "replay": os.path.join(build_dir, "tools/mdcast-replay"),
             "wakeup-probe": os.path.join(build_dir, "tools/mdcast-wakeup-probe"),
             "linkshim": os.path.join(build_dir, "tools/mdcast-linkshim")}
    missing = [p for p in found.values() if not os.access(p, os.X_OK)]
    if missing:
        sys.exit(f"mdcast-bench: not built: {', '.join(missing)} (run deploy/setup.sh build)")
    return found


def ints(text):
    return [int(float(x)) for x in text.split(",") if x]


class Runner:
    def __init__(self, args):
        self.args = args
        self.load_before = os.getloadavg()
        self.bin = binaries(os.path.abspath(args.build_dir))
        self.profiles = os.path.join(os.path.abspath(args.source_dir), "etc/profiles")
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        self.out = os.path.join(os.path.abspath(args.out), stamp)
        os.makedirs(self.out, exist_ok=True)
        self.points = []
        self.client = args.clients[0]  # the client of the points run now
        self.replay = replay_load(self.bin["replay"], args.replay, args.replay_speed) if args.replay else None

    def run(self, point):
        if self.args.latency_rate:
            point.latency_rate = self.args.latency_rate
        point.tick_us = self.args.tick_us
        point.tls = self.args.tls
        point.client = self.client
        point.source = "interactive" if self.args.source_mode == "interactive" else self.args.source
        point.plain_updates = self.args.plain_updates
        point.pin = self.args.pin
        point.realtime = self.args.realtime
        point.sdk_io_threads = self.args.sdk_io_threads
        point.sched_slice_us = self.args.sched_slice_us
        point.busy_poll_us = self.args.busy_poll_us
        point.ws_conflate_ms = self.args.ws_conflate_ms
        if self.replay:
            point.replay = self.replay
            point.rate = int(self.replay["rate"])
            point.items = self.replay["count"]
        print(f"  {point.label()} ...", end="", flush=True)
        run_point(point, self.bin, self.profiles, self.out)
        lat = point.result.get("latency")
        info = f" mean {lat['mean']:.1f} µs p99.9 {lat['p99_9']:.1f} µs" if lat else ""
        out = point.result.get("outbound_per_s")
        info += f", out {out:,.0f}/s" if out else ""
        print(f"{info} [{report.verdict(point)}]", flush=True)
        for note in point.result.get("notes", []):  # a limit the bench raised
            print(f"    note: {note}", flush=True)
        self.points.append(point)
        return point

    def timing(self, seconds, warmup):
        return (self.args.seconds if self.args.seconds is not None else seconds,
                self.args.warmup if self.args.warmup is not None else warmup)

    # `stop_rule`: end a ladder at its first failing rate (higher rates cannot do better).
    # quick runs every point so that its tables are always complete.
    def latency(self, rates, profiles, seconds, warmup, stop_rule=True):
        seconds, warmup = self.timing(seconds, warmup)
        for profile in profiles:
            print(f"latency, {profile} profile:")
            for rate in rates:
                p = self.run(Point("latency", profile, rate, seconds=seconds, warmup_s=warmup,
                                   connections=self.args.latency_connections))
                if stop_rule and not p.result["passed"]:
                    break

    def fanout(self, rates, servers_list, connections, processes, seconds, warmup, stop_rule=True):
        seconds, warmup = self.timing(seconds, warmup)
        for servers in servers_list:
            print(f"fanout, {servers} server instance(s), {connections} connections:")
            for rate in rates:
                p = self.run(Point("fanout", self.args.fanout_profile, rate, servers=servers, connections=connections,
                                   client_processes=processes, seconds=seconds, warmup_s=warmup,
                                   items=self.args.fanout_items))
                if stop_rule and not p.result["passed"]:
                    break

    def sizes(self, sizes, rates, seconds, warmup):
        seconds, warmup = self.timing(seconds, warmup)
        print("sizes, latency profile:")
        for rate in rates:
            for size in sizes:
                self.run(Point("sizes", "latency", rate, update_bytes=size, seconds=seconds, warmup_s=warmup,
                               connections=self.args.latency_connections))


def replay_load(binary, path, speed):
    """What --replay publishes: the capture's items (they must be named PREFIX000000 ...
    PREFIX(N-1), as mdcast-source and mdcast-bench name them, for the bench's clients),
    its rate and its length at `speed`."""
    listing = subprocess.run([binary, path, "--list"], capture_output=True, timeout=600)
    if listing.returncode != 0:
        sys.exit(f"mdcast-bench: mdcast-replay --list {path}: {listing.stderr.decode()[-500:]}")
    contents = json.loads(listing.stdout.decode().splitlines()[-1])
    names, services = contents["items"], contents["services"]
    prefix = names[0][:-6] if names else ""
    if len(services) != 1 or sorted(names) != [f"{prefix}{i:06d}" for i in range(len(names))]:
        sys.exit(f"mdcast-bench: --replay needs one service and items PREFIX000000 .. PREFIX(N-1); "
                 f"{path} has services {services} and items {names[:3]} ...")
    span = contents["span_s"] / speed
    if span <= 0 or contents["updates"] == 0:
        sys.exit(f"mdcast-bench: {path} holds no updates to replay")
    return {"file": os.path.abspath(path), "speed": speed, "service": services[0], "prefix": prefix,
            "count": len(names), "updates": contents["updates"], "span_s": span,
            "rate": contents["updates"] / span}


def run_scenario(runner, args):
    rates = ints(args.rates) if args.rates else None
    if runner.replay:
        rates = [int(runner.replay["rate"])]  # the capture sets the rate
    if args.scenario in ("latency", "all"):
        runner.latency(rates or LATENCY_RATES, args.profiles.split(","), 5, 1)
    if args.scenario in ("fanout", "all"):
        runner.fanout(rates or FANOUT_RATES, ints(args.servers), args.connections, args.client_processes, 5, 1.5)
    if args.scenario in ("sizes", "all"):
        runner.sizes(SIZES, rates or SIZE_RATES, 3, 0.5)
    if args.scenario == "quick":
        runner.latency(rates or [1_000, 10_000, 100_000], ["latency"], 2, 0.5, stop_rule=False)
        runner.fanout([10_000], [1, 2], 10, 2, 2, 0.5, stop_rule=False)
        runner.sizes([64, 256, 1024], [10_000], 1.5, 0.5)


# ---- the report ---------------------------------------------------------------------------

CLIENT_TEXT = {"sdk": "sdk (mdcast-bench-consumer: one libmdcast Consumer per connection, the handler "
                      "reads two fields of each update; I/O threads per process: see below)",
               "lean": "lean (mdcast-client: decodes only each update's header)",
               "ws": "ws (mdcast-bench-ws-consumer: WebSocket/JSON connections to clients.ws_port, one "
                     "process of one thread each; every message's Type, ID and SeqNumber read, not its "
                     "fields; JSON carries no publish stamp, so no latency)"}
SOURCE_TEXT = {"sdk": "sdk (mdcast-bench-publisher: the libmdcast Publisher, a FieldList per update)",
               "lean": "lean (mdcast-source: pre-encoded update frames)",
               "interactive": "interactive, sink-driven (mdcast-source --interactive on the libmdcast "
                              "Publisher: the service is interactive, each item is imaged when a client "
                              "asks for it and only requested items are published)"}


def source_kind(args):
    return "interactive" if args.source_mode == "interactive" else args.source


def source_text(args):
    if args.replay:
        return (f"replay (mdcast-replay: the capture {os.path.basename(args.replay)} at "
                f"{args.replay_speed:g}x its recorded speed, through the libmdcast Publisher)")
    plain = args.plain_updates and source_kind(args) == "sdk"
    return SOURCE_TEXT[source_kind(args)] + (", plain update() calls without a Batch per tick" if plain else "")


def machine():
    model = "unknown"
    memory = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), model)
        with open("/proc/meminfo") as f:
            kb = int(next(l.split()[1] for l in f if l.startswith("MemTotal")))
            memory = f"{kb / 1024 / 1024:.1f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    return {"cores": os.cpu_count(), "cpu": model, "kernel": platform.release(), "memory": memory,
            "host": platform.node(), "os": platform.platform()}


def source_version(source_dir, build_dir):
    def git(*args):
        try:
            return subprocess.run(["git", "-C", source_dir, *args], capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    if git("status", "--porcelain", "--untracked-files=no"):
        commit += " (with local changes)"
    build_type = "unknown"
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
            build_type = next((l.split("=", 1)[1].strip() for l in f if l.startswith("CMAKE_BUILD_TYPE:")),
                              build_type)
    except OSError:
        pass
    return commit, build_type


def write_report(runner, args, command):
    out = runner.out
    lat = [p for p in runner.points if p.scenario == "latency"]
    fan = [p for p in runner.points if p.scenario == "fanout"]
    siz = [p for p in runner.points if p.scenario == "sizes"]
    report.write_csv(os.path.join(out, "latency.csv"), report.LATENCY_COLUMNS, [report.latency_row(p) for p in lat])
    report.write_csv(os.path.join(out, "fanout.csv"), report.FANOUT_COLUMNS, [report.fanout_row(p) for p in fan])
    report.write_csv(os.path.join(out, "sizes.csv"), report.LATENCY_COLUMNS, [report.latency_row(p) for p in siz])
    report.write_histograms(os.path.join(out, "histograms.csv"), runner.points)
    charts, chart_note = report.draw_charts(out, lat, fan, siz)
    with open(os.path.join(out, "commands.txt"), "w") as f:
        for p in runner.points:
            f.write(f"# {p.label()}\n" + "\n".join(p.result.get("commands", [])) + "\n\n")
    m = machine()
    commit, build_type = source_version(os.path.abspath(args.source_dir), os.path.abspath(args.build_dir))
    lines = [f"# mdcast benchmark report: `{args.scenario}`", "",
             f"Run {datetime.datetime.now().strftime('%Y-%m-%d %H:%M:%S')} with mdcast {commit} "
             f"({build_type} build).", "",
             "## Machine", "",
             "| cores | CPU model | kernel | memory | OS |", "|---:|---|---|---|---|",
             f"| {m['cores']} | {m['cpu']} | {m['kernel']} | {m['memory']} | {m['os']} |", "",
             ("Client: " if len(args.clients) == 1 else "Clients (the tables' `client` column): ")
             + "; ".join(f"**{CLIENT_TEXT[c]}**" for c in args.clients) + f". Source: **{source_text(args)}**."
             + (f" SDK client I/O threads per process: **{sdk_threads_text(args)}**." if "sdk" in args.clients
                else ""), "",
             "All processes run on this one machine over loopback, multicast in local mode (interface "
             "127.0.0.1, TTL 0), "
             + ("SCHED_FIFO with `--realtime` (daemons at priority 55, source and clients at 49, as the "
                "seeds' `chrt -f`), " if args.realtime else "no real-time priority, ")
             + (f"a {args.sched_slice_us} µs scheduler slice for the daemons and the SDK programs "
                f"(`--sched-slice-us`), " if args.sched_slice_us else "")
             + ("pinned with `--pin`: distributor and servers on the first core, source and clients on "
                "the others, " if args.pin else "no CPU pinning, ")
             + (f"spinning {args.busy_poll_us} µs after the last input in the distributor, the servers and "
                "the SDK client (`--busy-poll-us`). " if args.busy_poll_us else "sleeping in epoll when idle. ") + "Load average (1, 5, 15 min) before "
             f"the run: {', '.join(f'{x:.2f}' for x in runner.load_before)}; after: "
             f"{', '.join(f'{x:.2f}' for x in os.getloadavg())} (anything else running on the machine "
             "competes with the stack). The seed's figures come from other hardware and are shown for "
             "scale, labelled with it:", "",
             f"- RMDS: {seed.RMDS_HARDWARE}.",
             f"- LBM: {seed.LBM_HARDWARE}.", "",
             "## Command", "", "```sh", command, "```", "",
             "The exact command line of every process of every point is in `commands.txt`; their logs, "
             "configs and per-interval client CSVs are in `logs/`.", "",
             "## Method", "",
             "Each point starts a fresh stack: mdcast-distributor, mdcast-server instance(s), mdcast-source "
             f"publishing 1,000 items round-robin at a paced rate ({args.tick_us} µs ticks with catch-up, "
             "lbmpubload-style), "
             "and mdcast-client process(es) subscribed to every item. Latency is publish stamp "
             "(CLOCK_REALTIME, in the update) to receipt in the client, through source → distributor → "
             "multicast → server → client; the first seconds (start-up: images, queue fill) are kept apart "
             "and the tables show steady state. Update size is the protobuf body of the Update frame "
             "(the seed's \"74-byte RWF messages\"). A point fails on any gap or duplicate, a closed client "
             "connection, a source that cannot keep the rate, clients receiving under 97 % of the updates "
             "due, a mean over 10 ms (latency scenarios), or a lag that grows through the run; a ladder "
             "stops at its first failing rate.", ""]
    if lat:
        lines += ["## Latency against update rate (seed Tables 2-5)", "",
                  "74-byte updates, 1,000 items, one server instance, one client connection. Milliseconds, "
                  "as in the seed. Seed columns: mean of Table 3 (SLERT/InfiniBand, their best) and "
                  "Table 4 (SLES/GigE, \"what most sites use\") at the same rate.", ""]
        for profile in sorted({p.profile for p in lat}):
            lines += report.latency_markdown(lat, profile)
        lines += ["Start-up (excluded above), image retrieval, and CPU % of one core per process in the "
                  "steady window:", "",
                  "| profile | updates/s | start-up mean ms | start-up max ms | images/s | source % "
                  "| distributor % | server % | client % | machine % (softirq) |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for p in lat:
            row = report.latency_row(p)
            lines.append(f"| {p.profile} | {p.rate:,} | {report.ms(row['startup_mean_us'])} "
                         f"| {report.ms(row['startup_max_us'])} | {report.num(row['images_per_s'])} "
                         f"| {report.num(row['source_cpu_percent'])} | {report.num(row['distributor_cpu_percent'])} "
                         f"| {report.num(row['server_cpu_percent'])} | {report.num(row['client_cpu_percent'])} "
                         f"| {report.num(row['machine_cpu_percent'])} ({report.num(row['softirq_percent'])}) |")
        lines.append("")
    if fan:
        lines += ["## Fanout (seed Table 1, \"Producer 50/50\")", "",
                  f"{args.fanout_items:,} items, every connection subscribed to every item, {args.fanout_profile} profile, "
                  "connections spread over the client processes and round-robin over the server instances. CPU % is of "
                  "one core over the steady window; machine CPU % is of all cores together, with the share "
                  "spent in softirq (loopback network processing no process's own time shows) in brackets.", ""]
        lines += report.fanout_markdown(fan)
        lines += bench_ws_age.markdown(fan, report.num, report.ms, report.verdict)
    if siz:
        lines += ["## Latency against update size (the LBM tables)", "",
                  "1,000 items, latency profile, one server, one client. Microseconds. The LBM columns are "
                  "the seed's Ultra Messaging over InfiniBand with VMA kernel bypass between two hosts, where "
                  "the same size and rate were published: a messaging layer alone, not a whole distribution "
                  "stack. Below its natural size (about 64-67 bytes with a stamp) an update cannot be made "
                  "smaller; the source counts such updates.", ""]
        lines += report.sizes_markdown(siz)
    lines += report.breakdown_markdown(lat)
    lines += report.cpu_per_update_markdown(runner.points)
    lines += ["## Charts", ""]
    lines += [f"![{c}]({c})" for c in charts] or [chart_note]
    lines.append("")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines))
    return lat, fan, siz


def print_summary(runner, lat, fan, siz):
    print(f"\nreport: {os.path.join(runner.out, 'report.md')}\n")
    if lat:
        print(f"{'profile':<11} {'updates/s':>10} {'mean µs':>9} {'p99 µs':>9} {'p99.9 µs':>9} {'max µs':>9}"
              f"  {'seed SLERT/IB mean µs':>21}  result")
        for p in lat:
            l = p.result.get("latency") or {}
            seed_mean = seed.RMDS_LATENCY["SLERT/InfiniBand"].get(p.rate)
            print(f"{p.profile:<11} {p.rate:>10,} {l.get('mean', 0):>9.1f} {l.get('p99', 0):>9.1f} "
                  f"{l.get('p99_9', 0):>9.1f} {l.get('max', 0):>9.1f}  "
                  f"{(f'{seed_mean[0] * 1000:.0f}' if seed_mean else '–'):>21}  {report.verdict(p)}")
        print_breakdown(lat)
    if fan:
        print(f"\n{'client':>6} {'servers':>7} {'conns':>5} {'in/s':>10} {'out/s':>12} {'server CPU %':>12}  result")
        for p in fan:
            r = p.result
            print(f"{p.client:>6} {p.servers:>7} {p.connections:>5} {r.get('inbound_per_s') or 0:>10,.0f} "
                  f"{r.get('outbound_per_s') or 0:>12,.0f} {r.get('server_cpu_percent') or 0:>12.0f}  "
                  f"{report.verdict(p)}")
        bench_ws_age.print_summary(fan)
    print(f"\nclient {runner.args.client}, source {'replay' if runner.args.replay else source_kind(runner.args)}{', pinned' if runner.args.pin else ''}"
          f"{', SCHED_FIFO' if runner.args.realtime else ''}"
          f"{f', busy poll {runner.args.busy_poll_us} µs' if runner.args.busy_poll_us else ''}"
          f"{f', {runner.args.sched_slice_us} µs slices' if runner.args.sched_slice_us else ''}; "
          "CPU µs per update (= CPU-s per million updates):")
    print(f"{'point':<50} {'source':>7} {'distrib':>7} {'server':>7} {'client':>7}")
    for p in runner.points:
        c = p.result.get("cpu_us_per_update") or {}
        print(f"{p.label():<50} " + " ".join(f"{c[k]:>7.3f}" if c.get(k) is not None else f"{'–':>7}"
                                              for k in ("source", "distributor", "server", "client")))
    if siz:
        print(f"\n{'bytes':>5} {'updates/s':>10} {'mean µs':>9} {'p99.9 µs':>9}  result")
        for p in siz:
            l = p.result.get("latency") or {}
            print(f"{p.update_bytes:>5} {p.rate:>10,} {l.get('mean', 0):>9.1f} {l.get('p99_9', 0):>9.1f}  "
                  f"{report.verdict(p)}")


def print_breakdown(points):
    """The floor and the hops of each latency point (report.md: "Where the time goes")."""
    print(f"\n{'profile':<11} {'updates/s':>10} {'floor µs':>9} {'stall ms':>9} {'mean µs':>9}  hops µs: "
          "publisher→distributor, distributor in→out, distributor→server, server in→out, server→client")
    for p in points:
        floor = (p.result.get("floor") or {}).get("floor_us")
        stall = (p.result.get("floor") or {}).get("stall_longest_ms")
        mean = (p.result.get("latency") or {}).get("mean")
        hops = p.result.get("breakdown") or {}
        cells = ", ".join(f"{hops[h]:.1f}" if hops.get(h) is not None else "–" for h in report.HOPS)
        print(f"{p.profile:<11} {p.rate:>10,} {floor if floor is not None else 0:>9.1f} "
              f"{stall if stall is not None else 0:>9.2f} {mean if mean is not None else 0:>9.1f}  {cells}")


def sdk_threads_text(args):
    if args.sdk_io_threads == 0:
        return "one per Consumer (no IoContext, --sdk-io-threads 0)"
    return f"{args.sdk_io_threads} shared (mdcast::IoContext, --sdk-io-threads {args.sdk_io_threads})"


def check_clients(args):
    """args.clients from --client; exits on what cannot run."""
    args.clients = [c for c in args.client.split(",") if c]
    unknown = [c for c in args.clients if c not in CLIENT_TEXT]
    if unknown or not args.clients:
        sys.exit(f"mdcast-bench: --client: unknown {', '.join(unknown) or 'nothing'} (sdk, lean, ws)")
    if len(args.clients) > 1 and args.scenario != "fanout":
        sys.exit("mdcast-bench: several --client values compare clients in the fanout scenario only")
    if "ws" in args.clients and (args.scenario != "fanout" or args.tls):
        sys.exit("mdcast-bench: --client ws runs the fanout scenario, without --tls (the bench's servers have "
                 "no wss:// certificate; the age of what WebSocket clients show: --ws-conflate-ms)")


def check_realtime(args):
    """--realtime needs the right to set SCHED_FIFO: say so before any process starts."""
    if not args.realtime:
        return
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    except PermissionError:
        sys.exit("mdcast-bench: --realtime needs root or CAP_SYS_NICE to run processes under SCHED_FIFO")


def check_sched_slice(args):
    """--sched-slice-us: in the kernel's range, and for the normal scheduling class only."""
    if not args.sched_slice_us:
        return
    if not 100 <= args.sched_slice_us <= 100000:
        sys.exit("mdcast-bench: --sched-slice-us is 100..100000 (0: the kernel's default)")
    if args.realtime:
        sys.exit("mdcast-bench: --sched-slice-us is for the normal scheduling class, not with --realtime")


def report_header(runner, args, command, scenario):
    """The first lines of a one-scenario report: when, what, where, and the command."""
    m = machine()
    commit, build_type = source_version(os.path.abspath(args.source_dir), os.path.abspath(args.build_dir))
    return [f"# mdcast benchmark report: `{scenario}`", "",
            f"Run {datetime.datetime.now().strftime('%Y-%m-%d %H:%M:%S')} with mdcast {commit} ({build_type} "
            f"build) on {m['cores']} cores ({m['cpu']}, {m['memory']}, Linux {m['kernel']}); load average "
            f"before: {', '.join(f'{x:.2f}' for x in runner.load_before)}, after: "
            f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}.", "",
            "## Command", "", "```sh", command, "```", ""]


def scale_report(runner, args, command):
    scale = bench_scale.run(runner, args)
    return bench_scale.write(scale, runner.out, report_header(runner, args, command, args.scenario))


def cutover_report(runner, args, command):
    results = bench_cutover.run(runner, args)
    return bench_cutover.write(results, runner.out, report_header(runner, args, command, args.scenario), args.cutover_silent_ms)


def post_report(runner, args, command):
    result = bench_post.run(runner, args)
    return bench_post.write(result, runner.out, report_header(runner, args, command, "post"))


def publisher_report(runner, args, command):
    result = bench_publisher.run(runner, args)
    return bench_publisher.write(result, runner.out, report_header(runner, args, command, "publisher"))


def cascade_report(runner, args, command):
    result = bench_cascade.run(runner, args)
    return bench_cascade.write(result, runner.out, report_header(runner, args, command, "cascade"))


def books_report(runner, args, command):
    result = bench_books.run(runner, args)
    return bench_books.write(result, runner, args, report_header(runner, args, command, "books"))


def main(argv):
    args = parse_args(argv)
    check_clients(args)
    bench_books.check(args)
    bench_ws_age.check(args)
    check_realtime(args)
    check_sched_slice(args)
    runner = Runner(args)
    command = "mdcast-bench " + " ".join(shlex.quote(a) for a in argv)
    print(f"mdcast-bench {args.scenario}: writing {runner.out}")
    if args.scenario == "scale":
        return scale_report(runner, args, command)
    if args.scenario == "cutover":
        return cutover_report(runner, args, command)
    if args.scenario == "post":
        return post_report(runner, args, command)
    if args.scenario == "publisher":
        return publisher_report(runner, args, command)
    if args.scenario == "cascade":
        return cascade_report(runner, args, command)
    if args.scenario == "books":
        return books_report(runner, args, command)
    try:
        for client in args.clients:
            runner.client = client
            if len(args.clients) > 1:
                print(f"client {client}:")
            run_scenario(runner, args)
    except KeyboardInterrupt:
        print("\ninterrupted: writing the report of the points run so far")
    lat, fan, siz = write_report(runner, args, command)
    print_summary(runner, lat, fan, siz)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
