"""mdcast-bench post: the post round trip against the update latency.

One stack with the latency profile: mdcast-bench-publisher (the SDK Publisher, run with
--accept-posts: it accepts each post and publishes its fields as an update) at --rates'
first rate (default 1,000 updates/s over 1,000 items), one SDK client measuring the
update latency (publish stamp to the handler), and mdcast-bench-poster posting on-stream
to one of the items, one post at a time at --post-rate, measuring post() to its
answer. The post's round trip crosses the same hops twice (client -> server -> backbone
control -> distributor -> publisher and back); the target is at most twice the update's
one-way latency (docs/benchmarks.md, "Posts")."""
import json
import os

from bench_stack import Stack


def add_arguments(parser):
    parser.add_argument("--post-rate", type=float, default=1000,
                        help="post: posts per second, one outstanding at a time (default 1000)")


def run(runner, args):
    rate = int(float(args.rates.split(",")[0])) if args.rates else 1000
    seconds = args.seconds if args.seconds is not None else 10
    warmup = args.warmup if args.warmup is not None else 1
    log_dir = os.path.join(runner.out, "logs", f"post-{rate}")
    bin_ = {**runner.bin, "poster": os.path.join(os.path.dirname(runner.bin["sdk-source"]), "mdcast-bench-poster")}
    result = {"rate": rate, "seconds": seconds, "post_rate": args.post_rate}
    with Stack(bin_, os.path.join(runner.profiles, "latency"), log_dir, client="sdk", source="sdk") as stack:
        stack.start_core(1)
        source = stack.source("--items", 1000, "--rate", rate, "--duration", warmup + seconds + 30,
                              "--tick-us", args.tick_us, "--accept-posts")
        source.wait_for_log("items registered", 60)
        client = stack.client("client0", "--connections", 1, "--item-count", 1000, "--output", "none",
                              "--duration", warmup + seconds, "--warmup", warmup)
        poster = stack.start("poster", [bin_["poster"], "--server", stack.server_list(), "--service", "MDCAST",
                                        "--item", "ITEM000001", "--on-stream", "--count",
                                        str(max(1, int(seconds * args.post_rate))), "--rate", str(args.post_rate)])
        poster.wait(timeout=seconds + 120)
        client.wait(timeout=seconds + 60)
        summary = client.json_line("summary", "log")
        lines = [line for line in open(poster.out_path).read().splitlines() if line.startswith("{")]
        result["commands"] = list(stack.commands)
    if summary is None or not lines:
        raise RuntimeError(f"post scenario: no client summary or poster output (logs in {log_dir})")
    result["update_latency_us"] = {k: summary["latency_us"][k] for k in ("count", "mean", "p50", "p90", "p99")}
    result["posts"] = json.loads(lines[-1])
    return result


def write(result, out_dir, header):
    u, p = result["update_latency_us"], result["posts"]
    rtt = p["rtt_us"]
    ratio = rtt["p50"] / u["p50"] if u["p50"] else float("inf")
    lines = header + [
        f"Updates: {result['rate']:,}/s over 1,000 items for {result['seconds']:g} s; posts: on-stream, "
        f"{result['post_rate']:g}/s, one outstanding, accepted and published as an update by the SDK "
        "Publisher.", "",
        "| | count | p50 µs | p90 µs | p99 µs |", "|---|---|---|---|---|",
        f"| update latency (one way) | {u['count']} | {u['p50']:.0f} | {u['p90']:.0f} | {u['p99']:.0f} |",
        f"| post round trip | {p['posts']} | {rtt['p50']} | {rtt['p90']} | {rtt['p99']} |", "",
        f"Post round trip p50 = {ratio:.2f} x the update latency p50 (target: at most 2). "
        f"Answers: {p['accepted']} accepted, {p['rejected']} refused {p['codes']}.", "",
        "## Commands", "", "```sh", *result["commands"], "```", ""]
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write("\n".join(lines))
    with open(os.path.join(out_dir, "post.json"), "w") as f:
        json.dump(result, f, indent=1)
    print("\n".join(lines[len(header):len(header) + 7]))
    return 0 if p["accepted"] == p["posts"] and ratio <= 2 else 1
