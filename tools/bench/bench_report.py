"""The benchmark report: report.md with our tables beside the seed's published
figures, a CSV per table, and PNG charts (python3-matplotlib)."""
import csv
import os

import bench_ws_age
import seed_figures as seed
from bench_breakdown import HOP_TITLES, HOPS


def ms(us):
    return f"{us / 1000:.3f}" if us is not None else "–"


def num(value, digits=0):
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def rate_text(rate):
    return f"{rate:,}"


def verdict(point):
    return "ok" if point.result.get("passed") else "STOP: " + "; ".join(point.result.get("failures", []))


# ---- latency ---------------------------------------------------------------------------

LATENCY_COLUMNS = ["profile", "rate", "update_bytes", "sent_per_s", "received_per_s", "points", "mean_us",
                   "stddev_us", "min_us", "p50_us", "p90_us", "p99_us", "p99_9_us", "p99_99_us", "max_us",
                   "startup_mean_us", "startup_max_us", "images_per_s", "source_cpu_percent",
                   "distributor_cpu_percent", "server_cpu_percent", "client_cpu_percent", "machine_cpu_percent",
                   "softirq_percent", "source_cpu_us_per_update", "distributor_cpu_us_per_update",
                   "server_cpu_us_per_update", "client_cpu_us_per_update", "floor_us", "floor_p50_us",
                   "stalls_over_1ms", "stall_longest_ms",
                   *[f"{h}_us" for h in HOPS], "hops_sampled", "passed", "failures"]


def _cpu_columns(p):
    c = p.result.get("cpu_us_per_update") or {}
    return {f"{k}_cpu_us_per_update": c.get(k) for k in ("source", "distributor", "server", "client")}


def latency_row(p):
    r = p.result
    cpu = r.get("cpu_percent", {})
    lat = r.get("latency") or {}
    start = r.get("startup_latency") or {}
    return {"profile": p.profile, "rate": p.rate, "update_bytes": p.update_bytes,
            "sent_per_s": r.get("inbound_per_s"), "received_per_s": r.get("outbound_per_s"),
            "points": lat.get("count"), "mean_us": lat.get("mean"), "stddev_us": lat.get("stddev"),
            "min_us": lat.get("min"), "p50_us": lat.get("p50"), "p90_us": lat.get("p90"),
            "p99_us": lat.get("p99"), "p99_9_us": lat.get("p99_9"), "p99_99_us": lat.get("p99_99"),
            "max_us": lat.get("max"), "startup_mean_us": start.get("mean"), "startup_max_us": start.get("max"),
            "images_per_s": r.get("images_per_s"), "source_cpu_percent": cpu.get("source"),
            "distributor_cpu_percent": cpu.get("distributor"), "server_cpu_percent": r.get("server_cpu_percent"),
            "client_cpu_percent": _sum_clients(cpu), "machine_cpu_percent": r.get("machine_cpu_percent"),
            "softirq_percent": r.get("softirq_percent"), "passed": r.get("passed"),
            "failures": "; ".join(r.get("failures", [])), **_cpu_columns(p), **_breakdown_columns(p)}


def _breakdown_columns(p):
    floor = p.result.get("floor") or {}
    hops = p.result.get("breakdown") or {}
    return {"floor_us": floor.get("floor_us"), "floor_p50_us": floor.get("floor_p50_us"),
            "stalls_over_1ms": floor.get("stalls_over_1ms"), "stall_longest_ms": floor.get("stall_longest_ms"),
            "hops_sampled": hops.get("sampled"),
            **{f"{h}_us": hops.get(h) for h in HOPS}}


def breakdown_markdown(points):
    """Each latency point beside the wake-up floor measured in the same run, and the mean of
    each hop (bench_breakdown)."""
    if not any(p.result.get("floor") for p in points):
        return []
    out = ["## Where the time goes", "",
           "Mean µs per hop over the steady window, for the sample of stamped updates the daemons "
           "time (about 1 in 4, the same updates at every stage, `common/net/hop_probe.h`); the last "
           "hop is the client's end-to-end mean less the server's send delay. **floor**: "
           "mdcast-wakeup-probe just before the point, the mean of one sleeping-reader hop of each kind "
           "on the path (TCP in + UDP + TCP out), pinned as the stack is: what the kernel and waking "
           "three idle processes cost before any mdcast code runs; **floor p50**: the sum of their "
           "medians (a loaded machine's tail moves the means most); **machine stalls**: "
           "`mdcast-wakeup-probe --kind stall` just before the point, a thread spinning on every CPU "
           "at once for 1 s: the gaps over 1 ms where the machine ran none of it (its host, "
           "interrupts, other tasks) and the longest, a tail under which no p99.9 can go.", "",
           "| profile | updates/s | floor µs (TCP + UDP + TCP) | floor p50 µs | machine stalls > 1 ms; longest ms "
           "| mean µs | mean − floor | " + " | ".join(HOP_TITLES) + " | sum of hops | sampled |",
           "|---|---:|---|---:|---|---:|---:|" + "---:|" * len(HOP_TITLES) + "---:|---:|"]
    for p in points:
        floor = p.result.get("floor")
        lat = p.result.get("latency") or {}
        hops = p.result.get("breakdown") or {}
        mean = lat.get("mean")
        floor_text = (f"{floor['floor_us']:.1f} ({floor['tcp_in_us']:.1f} + {floor['udp_us']:.1f} + "
                      f"{floor['tcp_out_us']:.1f})" if floor else "–")
        above = num(mean - floor["floor_us"], 1) if floor and mean is not None else "–"
        cells = [num(hops.get(h), 1) for h in HOPS]
        floor_p50 = num(floor["floor_p50_us"], 1) if floor else "–"
        stalls = (f"{floor['stalls_over_1ms']}; {floor['stall_longest_ms']:.2f}"
                  if floor and floor.get("stall_longest_ms") is not None else "–")
        mark = "" if p.result.get("passed") else " †"
        out.append(f"| {p.profile} | {rate_text(p.rate)}{mark} | {floor_text} | {floor_p50} | {stalls} | {num(mean, 1)} | {above} | "
                   + " | ".join(cells) + f" | {num(hops.get('sum_us'), 1)} | {num(hops.get('sampled'))} |")
    if not all(p.result.get("passed") for p in points):
        out += ["", "† The point did not keep up (see its result above): with a lag that grows through the "
                "window, each stage's window holds other updates (those in flight at its edges carry the "
                "lag), so its hops are not comparable and may come out negative."]
    return out + [""]


def _sum_clients(cpu):
    clients = [v for k, v in cpu.items() if k.startswith("client") and v is not None]
    return sum(clients) if clients else None


def latency_markdown(points, profile):
    rows = [p for p in points if p.profile == profile]
    if not rows:
        return []
    best = seed.RMDS_LATENCY["SLERT/InfiniBand"]
    gige = seed.RMDS_LATENCY["SLES/GigE"]
    out = [f"#### {profile} profile",
           "",
           "| updates/s | mean ms | std dev ms | max ms | min ms | points | p50 ms | p90 ms | p99 ms | p99.9 ms "
           "| p99.99 ms | seed SLERT/IB mean ms | seed SLES/GigE mean ms | result |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for p in rows:
        lat = p.result.get("latency")
        if lat:
            ours = [ms(lat["mean"]), ms(lat["stddev"]), ms(lat["max"]), ms(lat["min"]), num(lat["count"]),
                    ms(lat["p50"]), ms(lat["p90"]), ms(lat["p99"]), ms(lat["p99_9"]), ms(lat["p99_99"])]
        else:
            ours = ["–"] * 10
        seed_best = f"{best[p.rate][0]:.3f}" if p.rate in best else "–"
        seed_gige = f"{gige[p.rate][0]:.3f}" if p.rate in gige else "–"
        out.append(f"| {rate_text(p.rate)} | " + " | ".join(ours) + f" | {seed_best} | {seed_gige} | {verdict(p)} |")
    return out + [""]


# ---- CPU per update ----------------------------------------------------------------------

def cpu_per_update_markdown(points):
    """Per-process CPU per update of every point (bench_points.cpu_per_update)."""
    if not points:
        return []
    out = ["## CPU per update", "",
           "µs of CPU per update over the steady window (the same number is CPU-seconds per million "
           "updates): source and distributor per update published, servers (all instances) and clients "
           "(all processes) per update delivered to a client.", "",
           "| point | in/s | out/s | source | distributor | server | client |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for p in points:
        c = p.result.get("cpu_us_per_update") or {}
        cells = [f"{c[k]:.3f}" if c.get(k) is not None else "–" for k in ("source", "distributor", "server", "client")]
        out.append(f"| {p.label()} | {num(p.result.get('inbound_per_s'))} | {num(p.result.get('outbound_per_s'))} | "
                   + " | ".join(cells) + " |")
    return out + [""]


# ---- fanout ----------------------------------------------------------------------------

FANOUT_COLUMNS = ["client", "profile", "servers", "connections", "rate", "inbound_per_s", "outbound_per_s",
                  "server_cpu_percent", "updates_per_server_cpu_s", "distributor_cpu_percent",
                  "source_cpu_percent", "client_cpu_percent", "machine_cpu_percent", "softirq_percent",
                  "mean_us", "p99_us", "max_us", "source_cpu_us_per_update", "distributor_cpu_us_per_update",
                  "server_cpu_us_per_update", "client_cpu_us_per_update", *bench_ws_age.COLUMNS, "passed",
                  "failures"]


def fanout_row(p):
    r = p.result
    cpu = r.get("cpu_percent", {})
    lat = r.get("latency") or {}
    return {"client": p.client, "profile": p.profile, "servers": p.servers, "connections": p.connections, "rate": p.rate,
            "inbound_per_s": r.get("inbound_per_s"), "outbound_per_s": r.get("outbound_per_s"),
            "server_cpu_percent": r.get("server_cpu_percent"),
            "updates_per_server_cpu_s": r.get("updates_per_server_cpu_s"),
            "distributor_cpu_percent": cpu.get("distributor"), "source_cpu_percent": cpu.get("source"),
            "client_cpu_percent": _sum_clients(cpu), "machine_cpu_percent": r.get("machine_cpu_percent"),
            "softirq_percent": r.get("softirq_percent"), "mean_us": lat.get("mean"),
            "p99_us": lat.get("p99"), "max_us": lat.get("max"), "passed": r.get("passed"),
            "failures": "; ".join(r.get("failures", [])), **_cpu_columns(p), **bench_ws_age.row(p)}


def fanout_markdown(points):
    out = ["| client | servers | connections | target in/s | inbound updates/s | outbound updates/s | server CPU % "
           "| out per server CPU-s | distributor CPU % | source CPU % | clients CPU % | machine CPU % (softirq) "
           "| mean latency ms | result |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for p in points:
        row = fanout_row(p)
        out.append(f"| {p.client} | {p.servers} | {p.connections} | {rate_text(p.rate)} | {num(row['inbound_per_s'])} "
                   f"| {num(row['outbound_per_s'])} | {num(row['server_cpu_percent'])} "
                   f"| {num(row['updates_per_server_cpu_s'])} | {num(row['distributor_cpu_percent'])} "
                   f"| {num(row['source_cpu_percent'])} | {num(row['client_cpu_percent'])} "
                   f"| {num(row['machine_cpu_percent'])} ({num(row['softirq_percent'])}) "
                   f"| {ms(row['mean_us'])} | {verdict(p)} |")
    out += ["", "Best sustained (no loss, no growing lag), ours beside the seed's Table 1 (Producer 50/50):", "",
            "| system | inbound updates/s | outbound updates/s |", "|---|---:|---:|"]
    for client, servers in sorted({(p.client, p.servers) for p in points}):
        passed = [p for p in points if (p.client, p.servers) == (client, servers) and p.result.get("passed")]
        if passed:
            best = max(passed, key=lambda p: p.result["outbound_per_s"])
            out.append(f"| mdcast, this machine, {servers} server instance(s), {best.connections} connections, "
                       f"client {client} | {num(best.result['inbound_per_s'])} | {num(best.result['outbound_per_s'])} |")
        else:
            out.append(f"| mdcast, this machine, {servers} server instance(s), client {client} | none sustained | – |")
    for name, inbound, outbound in seed.RMDS_FANOUT:
        out.append(f"| seed: RMDS 6.3 {name} (4 P2PS, 2 client boxes) | {num(inbound)} | {num(outbound)} |")
    return out + [""]


# ---- sizes -----------------------------------------------------------------------------

def sizes_markdown(points):
    out = ["| update bytes | updates/s | mean µs | std dev µs | min µs | p50 µs | p99.9 µs | max µs "
           "| seed LBM mean µs | seed LBM p99.9 µs | result |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for p in points:
        lat = p.result.get("latency")
        lbm = seed.LBM_LATENCY.get((p.update_bytes, p.rate))
        cells = ([num(lat[k], 1) for k in ("mean", "stddev", "min", "p50", "p99_9", "max")]
                 if lat else ["–"] * 6)
        out.append(f"| {p.update_bytes} | {rate_text(p.rate)} | " + " | ".join(cells) +
                   f" | {lbm[1] if lbm else '–'} | {lbm[4] if lbm else '–'} | {verdict(p)} |")
    return out + [""]


# ---- files and charts --------------------------------------------------------------------

def write_csv(path, columns, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in columns})


def write_histograms(path, points):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["scenario", "profile", "rate", "update_bytes", "phase", "bucket_lower_us", "count"])
        for p in points:
            for phase, key in (("steady", "latency"), ("startup", "startup_latency")):
                for lower, count in (p.result.get(key) or {}).get("histogram_10us", []):
                    writer.writerow([p.scenario, p.profile, p.rate, p.update_bytes, phase, lower, count])


def _finish(plt, fig, ax, path, labels):
    """Labels (x, y, title), grid and legend, then saves the chart to `path`."""
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    ax.set_title(labels[2])
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return [os.path.basename(path)]


def draw_charts(out_dir, latency_points, fanout_points, size_points):
    """Returns the PNG file names drawn, or a reason why none were."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "charts not drawn: python3-matplotlib is not installed (deploy/setup.sh installs it)"
    drawn = []
    if latency_points:
        fig, ax = plt.subplots(figsize=(8, 5))
        for profile in sorted({p.profile for p in latency_points}):
            pts = [p for p in latency_points if p.profile == profile and p.result.get("latency")]
            rates = [p.rate for p in pts]
            ax.plot(rates, [p.result["latency"]["mean"] for p in pts], "o-", label=f"mdcast {profile}: mean")
            ax.plot(rates, [p.result["latency"]["p99_9"] for p in pts], "s--", label=f"mdcast {profile}: p99.9")
        for name in ("SLERT/InfiniBand", "SLES/GigE"):
            table = seed.RMDS_LATENCY[name]
            ax.plot(list(table), [v[0] * 1000 for v in table.values()], ":", label=f"seed RMDS {name}: mean")
        ax.set_xscale("log")
        ax.set_yscale("log")
        drawn += _finish(plt, fig, ax, os.path.join(out_dir, "latency.png"),
                         ("updates/s (74-byte updates, 1,000 items)", "latency µs",
                          "End-to-end latency: source → distributor → server → client"))
        drawn += _histogram_chart(plt, out_dir, latency_points)
    if fanout_points:
        fig, ax = plt.subplots(figsize=(8, 5))
        for client, servers in sorted({(p.client, p.servers) for p in fanout_points}):
            pts = [p for p in fanout_points if (p.client, p.servers) == (client, servers)
                   and p.result.get("outbound_per_s") is not None]
            ax.plot([p.result["inbound_per_s"] for p in pts], [p.result["outbound_per_s"] for p in pts], "o-",
                    label=f"mdcast, {servers} server instance(s), client {client}")
        drawn += _finish(plt, fig, ax, os.path.join(out_dir, "fanout.png"),
                         ("inbound updates/s", "outbound updates/s (all clients)",
                          "Fanout: every client subscribed to every item"))
    if size_points:
        fig, ax = plt.subplots(figsize=(8, 5))
        for rate in sorted({p.rate for p in size_points}):
            pts = [p for p in size_points if p.rate == rate and p.result.get("latency")]
            for key, style in (("mean", "o-"), ("p99_9", "s--")):
                ax.plot([p.update_bytes for p in pts], [p.result["latency"][key] for p in pts], style,
                        label=f"mdcast {key.replace('_', '.')} at {rate:,}/s")
        ax.set_xscale("log", base=2)
        drawn += _finish(plt, fig, ax, os.path.join(out_dir, "sizes.png"),
                         ("update body bytes", "latency µs", "Latency against update size"))
    return drawn, ""


def _histogram_chart(plt, out_dir, points):
    """The 10 µs histograms of the passing latency-profile points, up to 1 ms."""
    pts = [p for p in points if p.profile == "latency" and p.result.get("passed")
           and (p.result.get("latency") or {}).get("histogram_10us")]
    if not pts:
        return []
    fig, ax = plt.subplots(figsize=(8, 5))
    top = 0.0
    for p in pts[:6]:
        buckets = p.result["latency"]["histogram_10us"]
        total = sum(c for _, c in buckets)
        shown = [(b, 100.0 * c / total) for b, c in buckets if b < 1000]
        top = max([top] + [share for _, share in shown])
        ax.step([b for b, _ in shown], [share for _, share in shown], where="post", label=f"{p.rate:,}/s")
    ax.set_xlim(0, 1000)
    ax.set_ylim(0, top * 1.1 or 1)
    return _finish(plt, fig, ax, os.path.join(out_dir, "histograms.png"),
                   ("latency µs (10 µs buckets)", "% of updates",
                    "Latency histograms, latency profile (as the seed's Figures 3-5 to 3-8)"))
