"""mdcast-bench publisher: the most updates per second the SDK Publisher gets into a distributor.

One distributor with the latency profile and mdcast-bench-publisher (the SDK Publisher, 1,000
items, 74-byte updates) asked for more than it can send (--rates' first rate, default 10M/s, in
1 ms ticks) with --wait-when-full: a refused update() (outbox full) is retried after 100 µs, so
the rate is what the distributor takes. Measured from the distributor's updates_total over the
steady window (after --warmup), not from the publisher, whose 64 MiB outbox would count what it
only queued. Three ways of calling, each run --publisher-repeat times, alternating:

  plain    update() call by call, no Publisher::Batch: the natural batching of plain calls
           (docs/sdk-performance.md, "Plain update() loops")
  batch    every tick's updates in one Publisher::Batch
  plain-io plain calls with PublisherOptions::write_from_caller off (the I/O thread writes all)

With --pin the distributor runs on the first core and the publisher on the others, as in the
latency scenario."""
import json
import os
import statistics
import time

from bench_stack import Stack
from scale_probe import metric

MODES = {"plain": ["--unbatched"], "batch": [], "plain-io": ["--unbatched", "--io-thread-writes"]}


def add_arguments(parser):
    parser.add_argument("--publisher-repeat", type=int, default=3,
                        help="publisher: runs of each way of calling (default 3); the report gives the median")


def updates_total(port):
    # The distributor answers /metrics on the loop the flood keeps busy: on a loaded
    # machine an answer can take seconds, so ask patiently before giving up.
    found = None
    for _ in range(3):
        found = metric(port, "mdcast_distributor_updates_total", None, timeout=15)
        if found is not None:
            break
    if found is None:
        raise RuntimeError("the distributor's /metrics does not answer with mdcast_distributor_updates_total")
    return found


def run_once(runner, args, mode, rate, seconds, warmup, log_dir):
    """One stack: the rate into the distributor and the publisher's summary."""
    with Stack(runner.bin, os.path.join(runner.profiles, "latency"), log_dir, pin=args.pin) as stack:
        stack.start_core(0)
        port = stack.admin_ports()["distributor"]
        source = stack.source("--items", 1000, "--update-bytes", 74, "--rate", rate, "--tick-us", 1000,
                              "--max-batch", max(1, rate // 1000), "--duration", warmup + seconds + 1,
                              "--wait-when-full", *MODES[mode])
        source.wait_for_log("items registered", 60)
        time.sleep(warmup)
        start, started = updates_total(port), time.monotonic()
        time.sleep(seconds)
        end, ended = updates_total(port), time.monotonic()
        source.wait(timeout=warmup + seconds + 60)
        summary = source.json_line("source_summary", "out")
        commands = list(stack.commands)
    return {"mode": mode, "per_s": (end - start) / (ended - started),
            "publisher_cpu_s": summary["cpu_s"] if summary else None, "commands": commands}


def run(runner, args):
    rate = int(float(args.rates.split(",")[0])) if args.rates else 10_000_000
    seconds = args.seconds if args.seconds is not None else 4
    warmup = args.warmup if args.warmup is not None else 1.5
    runs = []
    for repeat in range(args.publisher_repeat):
        for mode in MODES:
            log_dir = os.path.join(runner.out, "logs", f"publisher-{mode}-{repeat + 1}")
            result = run_once(runner, args, mode, rate, seconds, warmup, log_dir)
            print(f"  {mode} run {repeat + 1}: {result['per_s']:,.0f} updates/s into the distributor", flush=True)
            runs.append(result)
    return {"rate": rate, "seconds": seconds, "warmup": warmup, "pin": args.pin, "runs": runs}


def write(result, out_dir, header):
    lines = header + [
        f"Asked: {result['rate']:,} updates/s over 1,000 items (74 bytes), 1 ms ticks, retrying a full outbox; "
        f"measured: the distributor's updates_total over {result['seconds']:g} s after {result['warmup']:g} s"
        + (", distributor on the first core, publisher on the others." if result["pin"] else "."), "",
        "| way of calling | median updates/s | runs |", "|---|---:|---|"]
    for mode in MODES:
        rates = [r["per_s"] for r in result["runs"] if r["mode"] == mode]
        lines.append(f"| {mode} | {statistics.median(rates):,.0f} | {', '.join(f'{x:,.0f}' for x in rates)} |")
    lines += ["", "## Commands (the first run of each)", "", "```sh"]
    for mode in MODES:
        lines += next(r["commands"] for r in result["runs"] if r["mode"] == mode)
    lines += ["```", ""]
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write("\n".join(lines))
    with open(os.path.join(out_dir, "publisher.json"), "w") as f:
        json.dump(result, f, indent=1)
    print("\n".join(lines[len(header):len(header) + 4 + len(MODES)]))
    return 0
