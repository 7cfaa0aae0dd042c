"""Where a latency point's time goes: the wake-up floor measured beside it and the mean
delay of each hop of the path (docs/benchmarks.md, "Where the time goes").

The floor is mdcast-wakeup-probe over the stack's three hops (TCP into the distributor,
UDP multicast to the server, TCP to the client), each with a reader that sleeps between
messages as every mdcast process does, run just before the point's stack starts and
pinned as the stack is with --pin.

The hops come from the daemons' stage histograms (common/net/hop_probe.h): for the same
sample of stamped updates, the distributor and the server each export the delay from the
publisher's stamp to their receipt and to their write. Their _sum and _count are read
from /metrics at the start and the end of the steady window; the means over the window,
stage after stage, give the hops, and the client's end-to-end mean gives the last one."""
import re
import subprocess
import urllib.request

# Path order: each stage's mean delay from the publisher's stamp.
STAGES = [("distributor", "receive"), ("distributor", "send"), ("server", "receive"), ("server", "send")]
HOPS = ["publisher_to_distributor", "distributor_in_to_out", "distributor_to_server", "server_in_to_out",
        "server_to_client"]
HOP_TITLES = ["publisher call → distributor receive", "distributor receive → send",
              "distributor send → server receive", "server receive → send", "server send → SDK delivery"]
FLOOR_KINDS = [("tcp", "client", "daemon"), ("udp", "daemon", "daemon"), ("tcp", "daemon", "client")]
FLOOR_MESSAGES = 200
STALL_SECONDS = 1


def _probe_us(binary, kind, writer_cpu, reader_cpu):
    """(mean, p50) µs of one hop of `kind`."""
    argv = [binary, "--kind", kind, "--count", str(FLOOR_MESSAGES), "--interval-us", "1000"]
    if writer_cpu is not None:
        argv += ["--writer-cpu", str(writer_cpu), "--reader-cpu", str(reader_cpu)]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    match = re.search(r"mean ([\d.]+) us, p50 ([\d.]+)", out.stdout)
    if out.returncode != 0 or not match:
        raise RuntimeError(f"mdcast-wakeup-probe --kind {kind}: {out.stdout}{out.stderr}"[:300])
    return float(match.group(1)), float(match.group(2))


def machine_stalls(binary):
    """{"stalls_over_1ms", "stall_longest_ms", "stall_lost_pct"}: mdcast-wakeup-probe --kind stall,
    a thread spinning on every CPU at once for STALL_SECONDS: the gaps where the machine did not
    run it (a virtual CPU taken by its host, interrupts, other tasks) are a tail no stack on this
    machine can get under."""
    out = subprocess.run([binary, "--kind", "stall", "--seconds", str(STALL_SECONDS)],
                         capture_output=True, text=True, timeout=60)
    match = re.search(r"^stall all .*?(\d+) > 1 ms, ([\d.]+) % of the time lost, longest ([\d.]+) ms",
                      out.stdout, re.M)
    if out.returncode != 0 or not match:
        raise RuntimeError(f"mdcast-wakeup-probe --kind stall: {out.stdout}{out.stderr}"[:300])
    return {"stalls_over_1ms": int(match.group(1)), "stall_lost_pct": float(match.group(2)),
            "stall_longest_ms": float(match.group(3))}


def wakeup_floor(binary, cpus_of_role):
    """{"tcp_in_us", "udp_us", "tcp_out_us", "floor_us", "floor_p50_us"}: the mean of one
    sleeping-reader hop of each kind on the stack's path, their sum, and the sum of their
    medians (a loaded machine's tail moves the mean most); `cpus_of_role(role)` is the CPU
    set of "daemon" or "client" (None: not pinned)."""
    hops = []
    for kind, writer, reader in FLOOR_KINDS:
        w, r = cpus_of_role(writer), cpus_of_role(reader)
        hops.append(_probe_us(binary, kind, min(w) if w else None, min(r) if r else None))
    return {"tcp_in_us": hops[0][0], "udp_us": hops[1][0], "tcp_out_us": hops[2][0],
            "floor_us": sum(mean for mean, _ in hops), "floor_p50_us": sum(p50 for _, p50 in hops),
            **machine_stalls(binary)}


def scrape(port):
    """{(stage, end): (sum seconds, count)} of one daemon's hop histograms; {} when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return {}
    found = {}
    for end in ("receive", "send"):
        values = [re.search(rf"^mdcast_\w+_update_{end}_delay_seconds_{part} (\S+)$", text, re.M)
                  for part in ("sum", "count")]
        if all(values):
            found[end] = (float(values[0].group(1)), float(values[1].group(1)))
    return found


def window_means(start, end):
    """Mean µs and count of each (daemon, end) over a window, from scrapes at its ends:
    {daemon: {end: (sum, count)}} each; several servers' sums and counts add up."""
    means = {}
    for daemon, stage in STAGES:
        total, count = 0.0, 0.0
        for before, after in zip(start.get(daemon, []), end.get(daemon, [])):
            if stage in before and stage in after:
                total += after[stage][0] - before[stage][0]
                count += after[stage][1] - before[stage][1]
        means[(daemon, stage)] = (1e6 * total / count if count > 0 else None, int(count))
    return means


def breakdown(start, end, e2e_mean_us):
    """{hop: µs} for HOPS, plus "sampled" (the fewest samples of a stage) and "sum_us";
    None when a stage was not sampled in the window."""
    means = window_means(start, end)
    if any(mean is None for mean, _ in means.values()) or e2e_mean_us is None:
        return None
    stages = [means[s][0] for s in STAGES] + [e2e_mean_us]
    hops = {"publisher_to_distributor": stages[0]}
    hops.update({name: after - before for name, before, after in zip(HOPS[1:], stages, stages[1:])})
    hops["sum_us"] = sum(hops[h] for h in HOPS)
    hops["sampled"] = min(count for _, count in means.values())
    return hops
