"""The admin HTTP endpoint of the server and the distributor: Prometheus
/metrics with every counter, /healthz that says why it is unhealthy, /stats
with per-client detail and recent closes; only GET on known paths. /info shows
the effective configuration with each value JSON of its type (not a string
holding JSON), and the service directory clients get counts the items the
distributor registered."""
import json
import re
import socket
import time

import wire
from harness import Stack, admin_port, check, http_get as get, frame, login_frame, run, split_frames, wait_for_log

DIRECTORY, DIRECTORY_REQUEST = 23, 30


def test_metrics_health_and_stats():
    with Stack("admin") as stack:
        # A server with no distributor yet is not healthy, and says why.
        server = stack.server(1)
        sport = admin_port(server)
        code, body = get(sport, "/healthz")
        check(code == 503 and "no distributor" in body, f"healthz before the backbone: {code} {body}")
        distributor = stack.distributor()
        dport = admin_port(distributor)
        source = stack.source("--items", "5", "--rate", "200", "--duration", "6")
        wait_for_log(source, "items registered")
        client = stack.client(1, "--items", "ITEM000001,ITEM000002", "--duration", "4", "--user", "alice")
        wait_for_log(server, "logged in")
        code, body = get(sport, "/healthz")
        check(code == 200 and body.strip() == "ok", f"healthz: {code} {body}")
        code, stats = get(sport, "/stats")
        stats = json.loads(stats)
        check(code == 200 and any(c["user"] == "alice" and c["subscriptions"] == 2 for c in stats["clients"]),
              f"stats: {stats['clients']}")
        # Rates are sampled every second while the client receives 2 of 5 items at 200 updates/s.
        deadline = time.monotonic() + 5
        rate = 0
        while rate == 0 and time.monotonic() < deadline:
            clients = json.loads(get(sport, "/stats")[1])["clients"]
            rate = max([c["messages_out_per_s"] for c in clients if c["user"] == "alice"], default=0)
            time.sleep(0.2)
        check(20 < rate < 2000, f"messages_out_per_s {rate}, the client gets about 80 updates/s: {clients}")
        check(client.wait(15) == 0, "client exit code")
        code, stats = get(sport, "/stats")
        check(any(c["user"] == "alice" and c["reason"] == "peer_closed" for c in json.loads(stats)["recent_closes"]),
              "the client's close is not in recent_closes")
        code, metrics = get(sport, "/metrics")
        check(code == 200, f"metrics: {code}")
        for name in ("mdcast_server_updates_in_total", "mdcast_server_updates_out_total", "mdcast_server_clients",
                     "mdcast_server_repaired_total", "mdcast_server_closes_total", "mdcast_build_info",
                     "process_resident_memory_bytes", "mdcast_server_repair_seconds"):
            check(re.search(rf"^# TYPE {name} (counter|gauge|histogram)$", metrics, re.M) and
                  re.search(rf"^{name}(_count)?({{[^}}]*}})? \d", metrics, re.M), f"{name} missing from /metrics")
        updates = int(re.search(r"^mdcast_server_updates_out_total (\d+)", metrics, re.M).group(1))
        check(updates > 0, "no updates out counted")
        check(int(re.search(r'^mdcast_server_closes_total{reason="peer_closed"} (\d+)', metrics, re.M).group(1)) >= 1,
              "closes by reason not counted")
        build = re.search(r'^mdcast_build_info{daemon="mdcast-server",version="[\d.]+",commit="\w+",'
                          r'build_type="\w*"} 1$', metrics, re.M)
        check(build, "mdcast_build_info without its labels")
        code, metrics = get(dport, "/metrics")
        check(code == 200 and re.search(r"^mdcast_distributor_updates_total [1-9]", metrics, re.M), "distributor metrics")
        check(get(dport, "/healthz")[0] == 200, "distributor healthz")
        check(get(sport, "/nothing")[0] == 404, "unknown path not refused")
        check(get(sport, "/metrics", method="POST")[0] >= 400, "POST accepted")
        check(source.wait(15) == 0, "source failed")


def wait_healthy(port, timeout=5):
    deadline = time.monotonic() + timeout
    code, body = get(port, "/healthz")
    while code != 200 and time.monotonic() < deadline:
        time.sleep(0.1)
        code, body = get(port, "/healthz")
    return code, body


def test_healthy_with_a_distributor_and_no_publisher():
    # The distributor heartbeats from start-up: a server started after it hears it
    # (and is healthy) before any publisher connects, and stays so while it is idle.
    with Stack("admin-idle") as stack:
        distributor = stack.distributor()
        time.sleep(1.5)  # past the first heartbeats: the server must hear later ones
        server = stack.server(1)
        sport = admin_port(server)
        code, body = wait_healthy(sport)
        check(code == 200 and body.strip() == "ok", f"healthz with an idle distributor: {code} {body}")
        time.sleep(3.5)  # longer than backbone.source_silent_ms (3 s)
        code, body = get(sport, "/healthz")
        check(code == 200, f"healthz after idle seconds: {code} {body}")
        distributor.stop()
        code, body = get(sport, "/healthz")
        deadline = time.monotonic() + 6
        while code == 200 and time.monotonic() < deadline:
            time.sleep(0.2)
            code, body = get(sport, "/healthz")
        check(code == 503 and "silent" in body, f"healthz with the distributor gone: {code} {body}")


def directory_item_counts(port):
    """{service name: item_count} of the directory a client gets from the server."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(login_frame() + frame(DIRECTORY_REQUEST))
        data, deadline = b"", time.monotonic() + 5
        while time.monotonic() < deadline:
            data += sock.recv(65536)
            for kind, body in split_frames(data)[0]:
                if kind == DIRECTORY:
                    services = [wire.fields(s) for s in wire.fields(body).get(1, [])]
                    return {wire.first(s, 2, b"").decode(): wire.first(s, 5) for s in services}
    check(False, "no directory")


def test_info_config_is_typed_json_and_directory_counts_items():
    with Stack("admin-info") as stack:
        distributor = stack.distributor()
        server = stack.server(1)
        for process, port_key, port in ((server, "clients.port", stack.client_ports[1]),
                                        (distributor, "publishers.port", stack.publisher_port)):
            config = json.loads(get(admin_port(process), "/info")[1])["config"]
            check(config[port_key] == port and config["admin.enabled"] is True and
                  config["admin.address"] == "127.0.0.1" and config["backbone.extra_groups"] == [] and
                  config["admin.token_file"] == "" and config["log.level"] == "info",
                  f"{process.name} /info config values are not typed once: {config}")
        source = stack.source("--items", "7", "--rate", "100", "--duration", "30")
        wait_for_log(source, "items registered")
        deadline = time.monotonic() + 5
        counts = directory_item_counts(stack.client_ports[1])
        while counts.get("MDCAST") != 7 and time.monotonic() < deadline:
            time.sleep(0.2)
            counts = directory_item_counts(stack.client_ports[1])
        check(counts == {"MDCAST": 7}, f"directory item counts {counts}, the service has 7 items")
        source.stop()


if __name__ == "__main__":
    run([test_metrics_health_and_stats, test_healthy_with_a_distributor_and_no_publisher,
         test_info_config_is_typed_json_and_directory_counts_items])
