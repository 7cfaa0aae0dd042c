#!/usr/bin/env python3
"""Latency probe: end-to-end latency from the publisher's embedded timestamp
(update.publish_time_ns, CLOCK_REALTIME at the publisher) to this process, and
the receive rate, reading BID from every update.

    python3 latency_probe.py --servers 127.0.0.1:14002 --items 1000 --duration 10
    python3 latency_probe.py ... --mode batch     # the batch API
    python3 latency_probe.py ... --mode asyncio   # async for

Publisher and consumer on one host share the clock; across hosts the figure
includes their clock offset (PTP/NTP).
"""
import argparse
import asyncio
import math
import resource
import statistics
import time

import mdcast


def percentiles(latencies_ns):
    if not latencies_ns:
        return "no stamped updates"
    q = statistics.quantiles(latencies_ns, n=100)
    return (f"latency us: p50 {q[49] / 1e3:.1f}  p90 {q[89] / 1e3:.1f}  p99 {q[98] / 1e3:.1f}  "
            f"max {max(latencies_ns) / 1e3:.1f}")


def by_iterator(consumer, until):
    count, latencies, bid_sum = 0, [], 0.0
    for event in consumer.events(timeout=1.0):
        if event.kind == "update":
            count += 1
            bid_sum += event.get("BID", 0.0)
            if event.publish_time_ns and count % 16 == 0:
                latencies.append(mdcast.realtime_now_ns() - event.publish_time_ns)
        if time.monotonic() >= until:
            break
    return count, latencies, bid_sum


def by_batch(consumer, until):
    count, latencies, bid_sum = 0, [], 0.0
    while time.monotonic() < until:
        batch = consumer.read(timeout=1.0)
        bids = batch.values("BID", 0.0)
        bid_sum += math.fsum(bids)
        count += len(bids)
        stamps = batch.publish_times_ns()
        if stamps and stamps[-1]:
            latencies.append(mdcast.realtime_now_ns() - stamps[-1])
    return count, latencies, bid_sum


async def by_asyncio(consumer, until):
    count, latencies, bid_sum = 0, [], 0.0
    async for event in consumer:
        if event.kind == "update":
            count += 1
            bid_sum += event.get("BID", 0.0)
            if event.publish_time_ns and count % 16 == 0:
                latencies.append(mdcast.realtime_now_ns() - event.publish_time_ns)
        if time.monotonic() >= until:
            break
    return count, latencies, bid_sum


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="127.0.0.1:14002")
    parser.add_argument("--service", default="MDCAST")
    parser.add_argument("--items", type=int, default=100, help="ITEM000000 ... (mdcast-source names)")
    parser.add_argument("--duration", type=float, default=10)
    parser.add_argument("--warmup", type=float, default=1, help="seconds not measured")
    parser.add_argument("--mode", choices=("iterator", "batch", "asyncio"), default="iterator")
    args = parser.parse_args()

    items = [f"ITEM{i:06d}" for i in range(args.items)]
    with mdcast.Consumer(args.servers, max_queued_events=1 << 18) as consumer:
        consumer.wait_connected(5)
        consumer.subscribe_batch(args.service, items)
        warm_until = time.monotonic() + args.warmup  # images and warm-up, not measured
        while time.monotonic() < warm_until:
            consumer.read(timeout=0.1)
        cpu0, wall0 = time.process_time(), time.monotonic()
        until = wall0 + args.duration
        if args.mode == "asyncio":
            count, latencies, _ = asyncio.run(by_asyncio(consumer, until))
        else:
            count, latencies, _ = (by_batch if args.mode == "batch" else by_iterator)(consumer, until)
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
        stats = consumer.stats()
    rate = count / wall if wall else 0
    print(f"mode {args.mode}: {count} updates in {wall:.1f} s = {rate:,.0f} updates/s; "
          f"process CPU {cpu / wall * 100:.0f}% = {cpu / count * 1e9 if count else 0:,.0f} ns/update "
          f"(I/O thread included); queue full waits {stats['full_waits']}; "
          f"max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB")
    print(percentiles(latencies))


if __name__ == "__main__":
    main()
