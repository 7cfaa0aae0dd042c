"""mdcast-bench books: MarketByPrice books beside field lists, with the same harness in the same run.

mdcast-bench-publisher (the SDK Publisher) publishes --fanout-items items (default 1,000) either
as field lists (74-byte updates, as the other scenarios) or, with --book-levels MIN:MAX (default
10:50), as MarketByPrice books of MIN..MAX levels whose updates each change 1-3 levels (an
update, a delete and an add, in turn: tools/bench/bench_book.h); the SDK clients
(mdcast-bench-consumer --books) read every action's key and fields (Event::book_entries()).
Two parts, each point a fresh stack, field lists then books at every step:

  fanout   one server, throughput profile (--fanout-profile), --book-connections (default
           10,50) connections over 2 client processes, every connection subscribed to every
           item; the inbound rate rises through --rates (default below) until a point fails.
           The figure is the most book updates/s out of the server at a passing point.
  latency  latency profile, one connection, --book-latency-rates (default 1K and 100K/s):
           mean, p50, p99, p99.9 from the publish stamp in the update to the SDK's read.

Writes report.md (books beside field lists, every point) and books.json."""
import json
import os

from bench_breakdown import HOP_TITLES, HOPS
from bench_points import Point

FANOUT_RATES = [5_000, 10_000, 20_000, 30_000, 50_000, 70_000, 100_000, 150_000, 200_000, 300_000, 500_000]
KINDS = ("field lists", "books")
LATENCY_STATS = ("mean", "p50", "p99", "p99_9")
CPU_KINDS = ("source", "distributor", "server", "client")  # per update in (source, distributor) or out


def add_arguments(parser):
    parser.add_argument("--book-levels", default="10:50",
                        help="books: MIN:MAX price levels of the books, spread over the items (default 10:50)")
    parser.add_argument("--book-connections", default="10,50",
                        help="books: client connections of the fanout part (default 10,50)")
    parser.add_argument("--book-latency-rates", default="1000,100000",
                        help="books: updates/s of the latency part, one connection (default 1000,100000)")


def check(args):
    if args.scenario == "books" and (args.clients != ["sdk"] or args.source != "sdk" or args.replay):
        raise SystemExit("mdcast-bench: books runs the SDK source and client (--source sdk --client sdk), "
                         "without --replay")


def _ints(text):
    return [int(float(x)) for x in text.split(",") if x]


def _levels(args, kind):
    return args.book_levels if kind == "books" else ""


def run(runner, args):
    """Every point, field lists then books at each step: {"fanout": {N: {kind: [points]}},
    "latency": {rate: {kind: point}}}."""
    seconds, warmup = runner.timing(3, 3)
    rates = _ints(args.rates) if args.rates else FANOUT_RATES
    result = {"fanout": {}, "latency": {}}
    for connections in _ints(args.book_connections):
        result["fanout"][connections] = {}
        for kind in KINDS:
            print(f"books, fanout of {kind}, 1 server instance, {connections} connections:")
            ladder = result["fanout"][connections][kind] = []
            for rate in rates:
                ladder.append(runner.run(Point("fanout", args.fanout_profile, rate, connections=connections,
                                               client_processes=min(2, connections), seconds=seconds,
                                               warmup_s=warmup, items=args.fanout_items,
                                               book_levels=_levels(args, kind))))
                if not ladder[-1].result["passed"]:
                    break
    for rate in _ints(args.book_latency_rates):
        print(f"books, latency at {rate:,} updates/s, one connection:")
        result["latency"][rate] = {kind: runner.run(Point("latency", "latency", rate, seconds=seconds,
                                                          warmup_s=warmup, items=args.fanout_items,
                                                          book_levels=_levels(args, kind)))
                                   for kind in KINDS}
    return result


def _best(ladder):
    """The passing point with the most updates out, or None."""
    passed = [p for p in ladder if p.result.get("passed")]
    return max(passed, key=lambda p: p.result.get("outbound_per_s") or 0, default=None)


def _point_row(kind, p):
    r = p.result
    lat = r.get("latency") or {}
    cpu = r.get("cpu_us_per_update") or {}
    return {"kind": kind, "part": p.scenario, "profile": p.profile, "connections": p.connections,
            "rate": p.rate, "inbound_per_s": r.get("inbound_per_s"), "outbound_per_s": r.get("outbound_per_s"),
            **{f"{k}_us": lat.get(k) for k in LATENCY_STATS},
            **{f"{k}_cpu_us_per_update": cpu.get(k) for k in CPU_KINDS},
            "hops_us": {h: (r.get("breakdown") or {}).get(h) for h in HOPS},
            "passed": bool(r.get("passed")), "failures": r.get("failures", [])}


def rows(result):
    """books.json: the summary rows (books beside field lists) and every point."""
    summary, points = [], []
    for connections, kinds in result["fanout"].items():
        best = {kind: _best(kinds[kind]) for kind in KINDS}
        summary.append({"measure": "updates/s out of one server", "connections": connections,
                        **{kind: (best[kind].result["outbound_per_s"] if best[kind] else None) for kind in KINDS},
                        **{f"{kind} at inbound/s": (best[kind].rate if best[kind] else None) for kind in KINDS}})
        points += [_point_row(kind, p) for kind in KINDS for p in kinds[kind]]
    for rate, kinds in result["latency"].items():
        for stat in LATENCY_STATS:
            summary.append({"measure": f"latency {stat} µs at {rate:,}/s", "connections": 1,
                            **{kind: (kinds[kind].result.get("latency") or {}).get(stat) for kind in KINDS}})
        points += [_point_row(kind, kinds[kind]) for kind in KINDS]
    return summary, points


def _cell(value):
    return "–" if value is None else f"{value:,.1f}" if isinstance(value, float) and value < 100 else f"{value:,.0f}"


def _cpu(value):
    return "–" if value is None else f"{value:.2f}"


def _ratio(row):
    fields, books = row["field lists"], row["books"]
    return f"{books / fields:.2f}" if fields and books is not None else "–"


def markdown(summary, points, args):
    lines = [f"{args.fanout_items:,} items; books: MarketByPrice, {args.book_levels.replace(':', '..')} levels "
             "(spread over the items), each update 1-3 level actions, read with Event::book_entries(); field "
             "lists: 74-byte updates, BID and ASK read. SDK Publisher and SDK Consumers; every point a fresh "
             "stack; field lists and books run one after the other at every step, so both see much the same "
             "machine load.", "",
             "| measure | connections | field lists | books | books / field lists |", "|---|---:|---:|---:|---:|"]
    for row in summary:
        lines.append(f"| {row['measure']} | {row['connections']} | {_cell(row['field lists'])} "
                     f"| {_cell(row['books'])} | {_ratio(row)} |")
    lines += ["", "Fanout: the most updates/s out at a passing point of the inbound ladder (a point fails on "
              "loss, a closed connection, a source behind its rate, under 97 % delivered, or a growing lag).",
              "", "## Every point", "",
              "| kind | part | profile | connections | rate in/s | out/s | mean µs | p50 µs | p99 µs | p99.9 µs "
              "| CPU µs per update: source | distributor | server | client | result |",
              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in points:
        lines.append(f"| {r['kind']} | {r['part']} | {r['profile']} | {r['connections']} | {r['rate']:,} "
                     f"| {_cell(r['outbound_per_s'])} | "
                     + " | ".join(_cell(r[f'{k}_us']) for k in LATENCY_STATS)
                     + " | " + " | ".join(_cpu(r[f"{k}_cpu_us_per_update"]) for k in CPU_KINDS)
                     + f" | {'ok' if r['passed'] else 'STOP: ' + '; '.join(r['failures'])} |")
    lines += ["", "Where the latency points' mean goes (µs; the daemons' hop histograms, "
              "docs/benchmarks.md, \"Where the latency goes\"): " + ", ".join(HOP_TITLES) + ".", "",
              "| kind | rate in/s | " + " | ".join(HOPS) + " |", "|---|---:|" + "---:|" * len(HOPS)]
    for r in points:
        if r["part"] == "latency":
            lines.append(f"| {r['kind']} | {r['rate']:,} | " + " | ".join(_cell(r["hops_us"][h]) for h in HOPS) + " |")
    return lines + [""]


def write(result, runner, args, header):
    summary, points = rows(result)
    lines = header + ["## Books beside field lists", ""] + markdown(summary, points, args)
    lines += ["## Commands", "", "The command line of every process of every point is in `commands.txt`.", ""]
    with open(os.path.join(runner.out, "report.md"), "w") as f:
        f.write("\n".join(lines))
    with open(os.path.join(runner.out, "books.json"), "w") as f:
        json.dump({"summary": summary, "points": points}, f, indent=1)
    with open(os.path.join(runner.out, "commands.txt"), "w") as f:
        for p in runner.points:
            f.write(f"# {p.label()}\n" + "\n".join(p.result.get("commands", [])) + "\n\n")
    print(f"\nreport: {os.path.join(runner.out, 'report.md')}\n")
    print(f"{'measure':<34} {'conns':>5} {'field lists':>12} {'books':>12} {'ratio':>6}")
    for row in summary:
        print(f"{row['measure']:<34} {row['connections']:>5} {_cell(row['field lists']):>12} "
              f"{_cell(row['books']):>12} {_ratio(row):>6}")
    return 0
