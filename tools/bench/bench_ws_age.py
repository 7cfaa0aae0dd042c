"""mdcast-bench fanout --client ws --ws-conflate-ms N: the age of what WebSocket clients show.

The servers stamp JSON messages (clients.ws_publish_time) and every client request asks for
LSEG's TimeConflated Qos at N ms (N = 0: tick by tick); the clients record now - PublishTime
at receipt (bench_points.ws_age). This module holds the options, the CSV columns, the report's
table and the console lines, apart from the scenarios themselves."""
import sys

COLUMNS = ["ws_conflate_ms", "ws_represented_per_s", "ws_conflated", "ws_stands_for", "ws_aged",
           "ws_age_p50_us", "ws_age_p99_us", "ws_age_p99_9_us", "ws_age_max_us", "ws_server_wait_percent"]


def add_arguments(parser):
    parser.add_argument("--ws-conflate-ms", type=int, metavar="MS",
                        help="fanout --client ws: the servers stamp JSON messages (clients.ws_publish_time) "
                             "and the clients ask for TimeConflated at MS ms (0: every update) and report "
                             "the age of what they show (now - PublishTime) and the updates the conflated "
                             "messages stand for")
    parser.add_argument("--fanout-items", type=int, default=1000,
                        help="fanout: items published, every connection subscribed to all (default 1000)")


def check(args):
    """Exits on what cannot run."""
    if args.ws_conflate_ms is not None and ("ws" not in args.clients or not 0 <= args.ws_conflate_ms <= 60000):
        sys.exit("mdcast-bench: --ws-conflate-ms is 0..60000 and for --client ws")
    if args.fanout_items < 1:
        sys.exit("mdcast-bench: --fanout-items is at least 1")


def row(p):
    """The point's columns of fanout.csv (empty unless it measured the age)."""
    a = p.result.get("ws_age")
    if not a:
        return {c: None for c in COLUMNS}
    return {"ws_conflate_ms": p.ws_conflate_ms, "ws_represented_per_s": a["represented_per_s"],
            "ws_conflated": a["conflated"], "ws_stands_for": a["stands_for"], "ws_aged": a["aged"],
            **{f"ws_age_{k}_us": a[f"age_{k}_us"] for k in ("p50", "p99", "p99_9", "max")},
            "ws_server_wait_percent": p.result.get("server_wait_percent")}


def markdown(points, num, ms, verdict):
    aged = [p for p in points if p.result.get("ws_age")]
    notes = [f"- {p.label()}: {n}" for p in points for n in p.result.get("notes", [])]
    out = ["Limits the bench raised:", "", *notes, ""] if notes else []
    if not aged:
        return out
    out += ["### WebSocket: the age of what the clients show", "",
           "Each connection asks for every item with `\"Qos\":{\"Rate\":\"TimeConflated\",\"RateInfo\":N}` "
           "(N = 0: tick by tick); the servers stamp every Update with the publisher's `PublishTime` "
           "(clients.ws_publish_time), and the clients record now - PublishTime at receipt: how old the "
           "value a grid shows is when it arrives. Messages/s are the Updates delivered to all connections; "
           "updates/s are the published updates they stand for (a conflated Update's ConflationInfo.Count). "
           "Age percentiles are the worst client process's (histograms are not merged across processes). "
           "Server waiting % is the time a server was runnable but waiting for a CPU (its run-queue time "
           "in /proc/<pid>/task/*/schedstat; the busiest instance), in % of the window: CPU % plus "
           "waiting % near 100 means the machine, not the server, set the pace.", "",
           "| servers | connections | items | in/s | conflation ms | messages/s out | updates/s they stand for "
           "| server CPU % | server waiting % | age p50 ms | age p99 ms | age p99.9 ms | age max ms | result |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for p in aged:
        r, c = p.result, row(p)
        out.append(f"| {p.servers} | {p.connections} | {p.items} | {num(r.get('inbound_per_s'))} | {p.ws_conflate_ms} "
                   f"| {num(r.get('outbound_per_s'))} | {num(c['ws_represented_per_s'])} "
                   f"| {num(r.get('server_cpu_percent'))} | {num(r.get('server_wait_percent'))} "
                   f"| {ms(c['ws_age_p50_us'])} | {ms(c['ws_age_p99_us'])} "
                   f"| {ms(c['ws_age_p99_9_us'])} | {ms(c['ws_age_max_us'])} | {verdict(p)} |")
    return out + [""]


def print_summary(points):
    aged = [p for p in points if p.result.get("ws_age")]
    if not aged:
        return
    print(f"\n{'conns':>5} {'items':>6} {'confl ms':>8} {'msgs/s out':>12} {'updates/s':>13} "
          f"{'server CPU %':>12} {'waiting %':>9} {'age p99 ms':>10} {'age max ms':>10}")
    for p in aged:
        r, c = p.result, row(p)
        print(f"{p.connections:>5} {p.items:>6} {p.ws_conflate_ms:>8} {r.get('outbound_per_s') or 0:>12,.0f} "
              f"{c['ws_represented_per_s'] or 0:>13,.0f} {r.get('server_cpu_percent') or 0:>12.0f} "
              f"{r.get('server_wait_percent') or 0:>9.0f} "
              f"{(c['ws_age_p99_us'] or 0) / 1000:>10.1f} {(c['ws_age_max_us'] or 0) / 1000:>10.1f}")
