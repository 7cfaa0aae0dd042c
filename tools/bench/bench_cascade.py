"""mdcast-bench cascade: what an edge server fed over TCP by a parent (docs/cascade.md) costs and
carries, on loopback. A hub (distributor and server, the profile's) and an edge (upstream.kind
tcp, parent: the hub), three measurements, each on its own stack:

  hop       the same updates (1,000 items at --rates' first rate, default 10,000/s) to a client
            of the hub and a client of the edge: the latency the cascade hop adds at the median
            and p99, against one loopback TCP hop (mdcast-wakeup-probe --kind tcp).
  link      --cascade-rates (default 100K, 200K, 500K, 1M updates/s over 1,000 items, throughput
            profile, the hub's link queue --cascade-link-max-bytes) through one link to a client
            of the edge, until the edge falls short of the source, loses the link or lags; the
            CPU each process spends per update.
  resync    --cascade-items (default 10,000) held at the edge, the link cut for
            --cascade-outage-s (default 30) by a relay between edge and hub (cut_proxy.py),
            then restored, while --cascade-resync-rate updates/s change some of them: the time
            from the restore to every item current at the edge (its items_suspect gauge back
            to 0) and the images the hub sent per changed item.
  throttled 20 items at 4,000 updates/s (a trade every 25th) through a relay paced to
            --cascade-throttle-bps (default 36,000 bytes/s, about a tenth of the feed) to a
            client of the edge: how old the updates are when they reach it (the link
            conflates: every item's latest value and every trade within 1 s is the target).
  failover  two hubs on one backbone, the edge's parents both (a warm standby link to the
            second, upstream.standby_link); --cascade-items held at the edge, changing at
            --cascade-resync-rate updates/s, a client on the edge; `kill -9` of the hub the edge
            is fed by: the time to the failover and to every item current again from the second
            hub, the images it sent, and what the edge's client saw (statuses, gaps)."""
import json
import os
import re
import time

import bench_breakdown
import bench_cascade_shim
from bench_stack import Stack, free_port, merge_config, wait_for_port
from cut_proxy import CutProxy
from scale_probe import admin_port, metric

LINK_RATES = [100_000, 200_000, 500_000, 1_000_000]


def add_arguments(parser):
    group = parser.add_argument_group("cascade scenario")
    group.add_argument("--cascade-rates", default=",".join(map(str, LINK_RATES)),
                       help="cascade: the link's rate ladder, updates/s")
    group.add_argument("--cascade-link-max-bytes", type=int, default=16 << 20,
                       help="cascade link: the hub's output.link_max_bytes, the link's queue (default 16 MiB, "
                            "200 ms at a million updates/s; the server's default, 1 MiB, is 13 ms there and "
                            "a hiccup of the edge longer than that makes the hub conflate the link)")
    group.add_argument("--cascade-items", type=int, default=10_000, help="cascade: items held during the outage")
    group.add_argument("--cascade-outage-s", type=float, default=30, help="cascade: seconds the link is cut")
    group.add_argument("--cascade-resync-rate", type=int, default=100,
                       help="cascade: updates/s of the resync's source (round robin over the items: "
                            "rate x outage of them change during the outage)")
    group.add_argument("--cascade-parts", default="hop,link,resync,throttled,failover",
                       help="cascade: which measurements")
    group.add_argument("--cascade-throttle-bps", type=int, default=36_000,
                       help="cascade: bytes/s the throttled link carries from hub to edge")
    group.add_argument("--cascade-shim-rtt-ms", type=float, default=0,
                       help="cascade: run the resync across mdcast-linkshim with this round trip, hub and "
                            "edge in network namespaces (root only; 0: loopback)")


def start_edge(stack, parent_port, log_dir, name="edge", **overrides):
    """An mdcast-server of the stack's profile fed over TCP by the server on `parent_port`."""
    port = free_port()
    with open(os.path.join(stack.profile_dir, "server.yaml")) as f:
        text = merge_config(f.read(), {
            "clients.port": port, "admin.enabled": True, "admin.port": 0, "admin.address": "127.0.0.1",
            "upstream.kind": "tcp", "upstream.parents": f'["127.0.0.1:{parent_port}"]', "upstream.user": name,
            "upstream.heartbeat_interval_ms": 1000, "upstream.heartbeat_timeout_ms": 3000,
            "upstream.reconnect_delay_ms": 100, **overrides})
    path = os.path.join(log_dir, name + ".yaml")
    with open(path, "w") as f:
        f.write(text)
    edge = stack.start(name, [stack.bin["server"], "--config", path], "daemon")
    wait_for_port(port, edge)
    edge.port = port
    return edge


def client_of(stack, port, name, *args):
    """The stack's kind of client on one server (stack.client() goes to the hub)."""
    binary = stack.bin["sdk-client" if stack.client_kind == "sdk" else "client"]
    return stack.start(name, [binary, "--server", f"127.0.0.1:{port}", *map(str, args)])


def source_rate(source):
    summary = source.json_line("source_summary")
    return summary["updates_per_s"] if summary else 0.0


def make_stack(runner, args, profile, log_dir):
    return Stack(runner.bin, os.path.join(runner.profiles, profile), log_dir, client=runner.client,
                 source=args.source)


def feed(stack, edge, items, rate, seconds):
    """The source, once the edge lists its service."""
    source = stack.source("--items", items, "--rate", rate, "--duration", seconds)
    source.wait_for_log("items registered", 120)
    edge.wait_for_log("service MDCAST (", 30)
    return source


def hop(runner, args):
    rate = int(float(args.rates.split(",")[0])) if args.rates else 10_000
    seconds = args.seconds if args.seconds is not None else 10
    warmup = args.warmup if args.warmup is not None else 1
    log_dir = os.path.join(runner.out, "logs", "cascade-hop")
    with make_stack(runner, args, "latency", log_dir) as stack:
        stack.start_core(1)
        edge = start_edge(stack, stack.client_base_port, log_dir)
        source = feed(stack, edge, 1000, rate, warmup + seconds + 10)
        clients = {where: client_of(stack, port, f"client-{where}", "--connections", 1, "--item-count", 1000,
                                    "--output", "none", "--duration", warmup + seconds, "--warmup", warmup)
                   for where, port in (("hub", stack.client_base_port), ("edge", edge.port))}
        for client in clients.values():
            client.wait(timeout=seconds + 120)
        source.terminate()
        summaries = {where: c.json_line("summary") for where, c in clients.items()}
        commands = list(stack.commands)
    if not all(summaries.values()):
        raise RuntimeError(f"cascade hop: a client printed no summary (logs in {log_dir})")
    tcp_mean, tcp_p50 = bench_breakdown._probe_us(runner.bin["wakeup-probe"], "tcp", None, None)
    lat = {where: s["latency_us"] for where, s in summaries.items()}
    return {"rate": rate, "seconds": seconds, "tcp_hop_p50_us": tcp_p50, "tcp_hop_mean_us": tcp_mean,
            "latency_us": {w: {k: l[k] for k in ("count", "p50", "p90", "p99")} for w, l in lat.items()},
            "hop_p50_us": lat["edge"]["p50"] - lat["hub"]["p50"], "hop_p99_us": lat["edge"]["p99"] - lat["hub"]["p99"],
            "commands": commands}


def link_point(runner, args, rate, seconds, warmup):
    log_dir = os.path.join(runner.out, "logs", f"cascade-link-{rate}")
    with make_stack(runner, args, "throughput", log_dir) as stack:
        stack.start_core(1, server_overrides={"output.link_max_bytes": args.cascade_link_max_bytes})
        edge = start_edge(stack, stack.client_base_port, log_dir)
        source = feed(stack, edge, 1000, rate, warmup + seconds + 2)
        client = client_of(stack, edge.port, "client-edge", "--connections", 1, "--item-count", 1000,
                           "--output", "none", "--duration", warmup + seconds, "--warmup", warmup)
        cpu_s = steady_cpu_seconds(stack, warmup, seconds)
        client.wait(timeout=seconds + 120)
        source.wait(timeout=60)
        summary, sent = client.json_line("summary"), source_rate(source)
        lost_links = len(re.findall(r"link to parent .* lost", edge.log_text()))
    if not summary:
        raise RuntimeError(f"cascade link {rate}/s: the client printed no summary (logs in {log_dir})")
    got = summary["steady_updates_per_s"]
    point = {"rate": rate, "source_per_s": sent, "edge_per_s": got, "gaps": summary["gaps"],
             "links_lost": lost_links, "p50_us": summary["latency_us"]["p50"], "p99_us": summary["latency_us"]["p99"]}
    # What each process spends per update it handles: the source, distributor and hub every
    # update sent, the edge and its client every update the client got. Their sum times the
    # rate is the cores the stack needs (the kernel's loopback work in softirq comes on top).
    point["cpu_us_per_update"] = {name: 1e6 * s / seconds / (got if name in ("edge", "client-edge") else sent)
                                  for name, s in cpu_s.items() if s is not None and got and sent}
    point["held"] = (got >= 0.98 * sent and summary["gaps"] == 0 and lost_links == 0
                     and summary["latency_us"]["p99"] < 1_000_000)
    return point


def steady_cpu_seconds(stack, warmup, seconds):
    """CPU seconds (user + system) each process of the stack spent in the clients' steady window."""
    time.sleep(warmup)
    for p in stack.processes:
        p.mark_cpu("start")
    time.sleep(seconds)
    for p in stack.processes:
        p.mark_cpu("end")
    return {p.name: p.cpu_marks["end"] - p.cpu_marks["start"] if len(p.cpu_marks) == 2 else None
            for p in stack.processes}


def link(runner, args):
    seconds = args.seconds if args.seconds is not None else 5
    warmup = args.warmup if args.warmup is not None else 1
    points = []
    for rate in [int(float(r)) for r in args.cascade_rates.split(",") if r]:
        points.append(link_point(runner, args, rate, seconds, warmup))
        print(f"  link {rate:>9,}/s: source {points[-1]['source_per_s']:,.0f}/s, edge {points[-1]['edge_per_s']:,.0f}/s"
              f", p99 {points[-1]['p99_us'] / 1000:.1f} ms{'' if points[-1]['held'] else '  (not held)'}; "
              f"CPU µs per update: {cpu_text(points[-1])}", flush=True)
        if not points[-1]["held"]:
            break
    return points


def cpu_text(point):
    cpu = point["cpu_us_per_update"]
    return ", ".join(f"{name} {us:.2f}" for name, us in cpu.items()) + f", sum {sum(cpu.values()):.2f}"


def wait_metrics(port, done, since, timeout_s):
    """Seconds from `since` (time.monotonic()) until done(metric) holds, polled every 5 ms; None
    after `timeout_s`."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if done(lambda name, default=-1: metric(port, name, default)):
            return time.monotonic() - since
        time.sleep(0.005)
    return None


def wait_current(edge_admin, items, timeout_s):
    """Seconds until the edge caches `items` items, none suspect, its link up; or None."""
    return wait_metrics(edge_admin, lambda m: m("mdcast_server_items_suspect") == 0
                        and m("mdcast_server_items") >= items and m("mdcast_server_upstream_link_up") == 1,
                        time.monotonic(), timeout_s)


def resync(runner, args):
    items, outage = args.cascade_items, args.cascade_outage_s
    log_dir = os.path.join(runner.out, "logs", "cascade-resync")
    with make_stack(runner, args, "latency", log_dir) as stack:
        # clients.max_frame_bytes: the edge subscribes everything again in batches of the hub's
        # max_items_per_request (10,000 names, about 120 KB), above the default 64 KiB frame
        # limit: the hub would close the link (frame_too_large) at every attempt.
        stack.start_core(1, server_overrides={"output.max_bytes": 64 << 20, "output.expected_clients": 2,
                                              "clients.max_frame_bytes": 1 << 20})
        proxy = CutProxy(stack.client_base_port)
        edge = start_edge(stack, proxy.port, log_dir, **{"output.max_bytes": 64 << 20, "output.expected_clients": 2})
        rate = args.cascade_resync_rate
        source = feed(stack, edge, items, rate, outage + 120)
        client = client_of(stack, edge.port, "client-edge", "--connections", 1, "--item-count", items,
                           "--output", "none", "--duration", outage + 90)
        hub_admin, edge_admin = stack.admin_ports()["servers"][0], admin_port(edge)
        if wait_current(edge_admin, items, 60) is None:
            raise RuntimeError(f"cascade resync: the edge never had its {items} items current (logs in {log_dir})")
        proxy.cut()
        time.sleep(outage)
        images_before = metric(hub_admin, "mdcast_server_refreshes_out_total")
        suspect = metric(edge_admin, "mdcast_server_items_suspect")
        proxy.restore()
        took = wait_current(edge_admin, items, 60)
        time.sleep(0.5)  # images still in flight are counted too
        images = metric(hub_admin, "mdcast_server_refreshes_out_total") - images_before
        client.terminate()
        source.terminate()
        proxy.close()
        commands = list(stack.commands)
    changed = min(items, int(rate * outage))  # the source goes round the items in turn
    return {"items": items, "outage_s": outage, "rate": rate, "changed": changed, "suspect_at_restore": suspect,
            "resync_s": took, "images": images, "images_per_item": images / items,
            "images_per_changed": images / max(changed, 1), "commands": commands}


def throttled(runner, args):
    seconds = args.seconds if args.seconds is not None else 10
    log_dir = os.path.join(runner.out, "logs", "cascade-throttled")
    with make_stack(runner, args, "latency", log_dir) as stack:
        stack.start_core(1)
        proxy = CutProxy(stack.client_base_port, rate=args.cascade_throttle_bps)
        edge = start_edge(stack, proxy.port, log_dir)
        # mdcast-source whatever --source says: the SDK's publisher marks no trades.
        source = stack.start("source", [stack.bin["source"], "--distributor", f"127.0.0.1:{stack.publisher_port}",
                                        "--items", "20", "--rate", "4000", "--duration", str(seconds + 4),
                                        "--trade-every", "25"])
        source.wait_for_log("items registered", 120)
        edge.wait_for_log("service MDCAST (", 30)
        # The first seconds are the link's start (its drain rate not measured yet): the
        # client's startup figures, apart from the steady ones.
        client = client_of(stack, edge.port, "client-edge", "--connections", 1, "--item-count", 20,
                           "--output", "none", "--duration", seconds + 3, "--warmup", 3)
        client.wait(timeout=seconds + 120)
        lost_links = len(re.findall(r"link to parent .* lost", edge.log_text()))
        hub_admin = stack.admin_ports()["servers"][0]
        episodes = metric(hub_admin, "mdcast_server_conflation_episodes_total")
        cut = metric(hub_admin, "mdcast_server_links_cut_slow_total")
        source.terminate()
        proxy.close()
        summary = client.json_line("summary")
    if not summary:
        raise RuntimeError(f"cascade throttled: the client printed no summary (logs in {log_dir})")
    lat, start = summary["latency_us"], summary["startup_latency_us"]
    return {"bytes_per_s": args.cascade_throttle_bps, "seconds": seconds, "updates": lat["count"],
            "p50_us": lat["p50"], "p99_us": lat["p99"], "max_us": lat["max"], "startup_max_us": start["max"],
            "gaps": summary["gaps"],
            "links_lost": lost_links, "conflation_episodes": episodes, "links_cut": cut}


def failover(runner, args):
    items, rate = args.cascade_items, args.cascade_resync_rate
    log_dir = os.path.join(runner.out, "logs", "cascade-failover")
    limits = {"output.max_bytes": 64 << 20, "output.expected_clients": 2}
    with make_stack(runner, args, "latency", log_dir) as stack:
        # clients.max_frame_bytes: the edge's resync asks in batches above the default 64 KiB (as resync).
        stack.start_core(2, server_overrides={**limits, "clients.max_frame_bytes": 1 << 20})
        hubs = [stack.client_base_port, stack.client_base_port + 1]
        edge = start_edge(stack, hubs[0], log_dir, **limits,
                          **{"upstream.parents": f'["127.0.0.1:{hubs[0]}", "127.0.0.1:{hubs[1]}"]'})
        source = feed(stack, edge, items, rate, 180)
        client = client_of(stack, edge.port, "client-edge", "--connections", 1, "--item-count", items,
                           "--output", "none", "--duration", 150)
        edge_admin = admin_port(edge)
        standby_hub_admin = stack.admin_ports()["servers"][1]
        if wait_current(edge_admin, items, 60) is None or wait_metrics(
                edge_admin, lambda m: m("mdcast_server_upstream_standby_link_up") == 1, time.monotonic(), 30) is None:
            raise RuntimeError(f"cascade failover: the edge never had its {items} items current with a standby "
                               f"link (logs in {log_dir})")
        time.sleep(1)  # a second of steady updates before the failure
        images_before = metric(standby_hub_admin, "mdcast_server_refreshes_out_total")
        killed = time.monotonic()
        stack.servers[0].popen.kill()
        switched = wait_metrics(edge_admin, lambda m: m("mdcast_server_upstream_failovers_total") >= 1, killed, 30)
        current = wait_metrics(edge_admin, lambda m: m("mdcast_server_upstream_failovers_total") >= 1
                               and m("mdcast_server_upstream_link_up") == 1
                               and m("mdcast_server_upstream_resync_waiting") == 0
                               and m("mdcast_server_items_suspect") == 0, killed, 60)
        time.sleep(2)  # updates go on from the second hub; late images are counted too
        images = metric(standby_hub_admin, "mdcast_server_refreshes_out_total") - images_before
        # The edge's own account of the resync on the standby link: images and UNCHANGED answers.
        done = re.findall(r"resync with parent \S+ done in (\d+) ms: (\d+) image\(s\), (\d+) unchanged",
                          edge.log_text())
        client.terminate()
        source.terminate()
        summary = client.json_line("summary")
        commands = list(stack.commands)
    if not summary:
        raise RuntimeError(f"cascade failover: the edge's client printed no summary (logs in {log_dir})")
    resync_ms, resync_images, resync_unchanged = map(int, done[-1]) if done else (None, None, None)
    return {"items": items, "rate": rate, "failover_s": switched, "current_s": current, "images": images,
            "resync_ms": resync_ms, "resync_images": resync_images, "resync_unchanged": resync_unchanged,
            "client_refreshes": summary["refreshes"], "client_statuses": summary["statuses"],
            "client_gaps": summary["gaps"], "client_updates": summary["updates"], "commands": commands}


def run(runner, args):
    parts = args.cascade_parts.split(",")
    result = {}
    resync_part = bench_cascade_shim.resync if args.cascade_shim_rtt_ms else resync
    for name, measure in (("hop", hop), ("link", link), ("resync", resync_part), ("throttled", throttled),
                          ("failover", failover)):
        if name in parts:
            print(f"cascade {name}:", flush=True)
            result[name] = measure(runner, args)
    return result


def write(result, out_dir, header):
    lines = list(header)
    if "hop" in result:
        h, lat = result["hop"], result["hop"]["latency_us"]
        lines += ["## The hop", "", f"{h['rate']:,} updates/s over 1,000 items for {h['seconds']:g} s (latency "
                  "profile), a client on the hub and one on the edge; one loopback TCP hop "
                  f"(mdcast-wakeup-probe --kind tcp): p50 {h['tcp_hop_p50_us']:.1f} µs, mean {h['tcp_hop_mean_us']:.1f} µs.",
                  "", "| client | updates | p50 µs | p90 µs | p99 µs |", "|---|---|---|---|---|"]
        lines += [f"| {w} | {lat[w]['count']} | {lat[w]['p50']:.0f} | {lat[w]['p90']:.0f} | {lat[w]['p99']:.0f} |"
                  for w in ("hub", "edge")]
        lines += ["", f"The hop adds {h['hop_p50_us']:.0f} µs at the median (target: one TCP hop + 10 µs = "
                  f"{h['tcp_hop_p50_us'] + 10:.0f} µs) and {h['hop_p99_us']:.0f} µs at p99.", ""]
    if "link" in result:
        lines += ["## One link", "", "| target/s | source/s | edge client/s | gaps | links lost | p50 µs | p99 µs | held |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {p['rate']:,} | {p['source_per_s']:,.0f} | {p['edge_per_s']:,.0f} | {p['gaps']} | "
                  f"{p['links_lost']} | {p['p50_us']:.0f} | {p['p99_us']:.0f} | {'yes' if p['held'] else 'no'} |"
                  for p in result["link"]]
        held = [p["edge_per_s"] for p in result["link"] if p["held"]]
        lines += ["", f"One link carried {max(held) if held else 0:,.0f} updates/s (target: 1,000,000).", "",
                  "CPU µs (user + system) per update each process handled, over the steady window (the sum "
                  "times the rate is the cores the stack needs, loopback softirq aside):", ""]
        lines += [f"- {p['rate']:,}/s: {cpu_text(p)}" for p in result["link"]]
        lines += [""]
    if "resync" in result:
        r = result["resync"]
        took = "never (60 s bound)" if r["resync_s"] is None else f"{r['resync_s']:.3f} s"
        where = f"across mdcast-linkshim with a {r['rtt_ms']:g} ms round trip" if r.get("rtt_ms") else "on loopback"
        lines += ["## Resync after an outage", "", f"{r['items']:,} items held at the edge ({where}), {r['rate']:,} updates/s "
                  f"round robin, the link cut for {r['outage_s']:g} s (about {r['changed']:,} items changed; "
                  f"{r['suspect_at_restore']:.0f} suspect at the restore): every item current {took} after the "
                  f"restore (target: 2 s + 1 RTT = {2 + r.get('rtt_ms', 0) / 1000:g} s); the hub sent {r['images']:.0f} images, "
                  f"{r['images_per_changed']:.2f} per changed item (target: at most one per changed item, none for "
                  "the others).", ""]
    if "throttled" in result:
        t = result["throttled"]
        lines += ["## A throttled link", "", f"20 items at 4,000 updates/s through a link of {t['bytes_per_s']:,} bytes/s "
                  f"for {t['seconds']:g} s: {t['updates']:,} updates reached the edge's client, p50 "
                  f"{t['p50_us'] / 1000:.0f} ms, p99 {t['p99_us'] / 1000:.0f} ms, **at most {t['max_us'] / 1e6:.2f} s** "
                  f"after they were published (target: 1 s; in the first 3 s, while the link's drain rate was "
                  f"not yet measured, at most {t['startup_max_us'] / 1e6:.2f} s); {t['conflation_episodes']:.0f} "
                  "conflation episode(s) "
                  f"at the hub, {t['links_cut']:.0f} link(s) cut, {t['links_lost']} lost, {t['gaps']} gap(s).", ""]
    if "failover" in result:
        f = result["failover"]
        seconds = (lambda v: "never (bound reached)" if v is None else f"{v * 1000:.1f} ms")
        lines += ["## A parent lost", "", f"{f['items']:,} items held at the edge, {f['rate']:,} updates/s round robin, "
                  "two hubs, the edge logged in to the second as its warm standby link; `kill -9` of the first: "
                  f"the edge failed over {seconds(f['failover_s'])} after the kill and had every item current "
                  f"from the second hub {seconds(f['current_s'])} after it. The edge's resync on the standby "
                  f"link: {f['resync_images']} image(s), {f['resync_unchanged']} unchanged, in {f['resync_ms']} ms "
                  f"(the second hub's mdcast_server_refreshes_out_total rose by {f['images']:.0f}). "
                  f"The edge's client got {f['client_refreshes']:,} "
                  f"refreshes in all for {f['items']:,} items (their first images included), "
                  f"{f['client_statuses']:,} status(es) (each item suspect at the loss, then ok again: "
                  f"docs/cascade.md, \"Failure behaviour\") and {f['client_gaps']} gap(s).", ""]
    lines += ["## Commands", "", "```sh"] + [c for part in ("hop", "resync", "failover") if part in result
                                             for c in result[part]["commands"]] + ["```", ""]
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write("\n".join(lines))
    with open(os.path.join(out_dir, "cascade.json"), "w") as f:
        json.dump(result, f, indent=1)
    print("\n".join(lines[len(header):]))
    return 0
