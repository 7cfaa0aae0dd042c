"""mdcastctl against a running stack: status, clients, items, item NAME, kick,
reload and drain, as text and --json; the admin endpoint's POSTs refuse a
missing or wrong token. reload reports what the daemon did (applied, restart
needed, refused with the file's errors) and sets the exit status; every command
works against the distributor too or says it does not apply, never a traceback.
drain moves SDK consumers to the other instance gradually, with fresh images and
no update repeated, and the server exits."""
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ETC, check, metric, wait_for_log  # noqa: E402
from test_admin_http import admin_port, get  # noqa: E402
import test_sdk_failover as failover  # noqa: E402

CTL = os.environ.get("MDCAST_CTL", os.path.join(os.path.dirname(__file__), "../../tools/ctl/mdcastctl"))
TOKEN = "s3cret-admin-token-0123456789"


def ctl(port, *args, token_file=None):
    argv = [sys.executable, CTL, "--admin", f"127.0.0.1:{port}"]
    if token_file:
        argv += ["--token-file", token_file]
    done = subprocess.run(argv + list(args), capture_output=True, text=True, timeout=30)
    return done.returncode, done.stdout, done.stderr


def ctl_json(port, *args, token_file=None):
    code, out, err = ctl(port, "--json", *args, token_file=token_file)
    check(code == 0, f"mdcastctl {' '.join(args)}: {code} {out} {err}")
    return json.loads(out)


def admin_section(token_file):
    return f"admin:\n  token_file: {token_file}\n"


def test_every_command_against_a_running_stack():
    with harness.Stack("ctl") as stack:
        token_file = stack.write("admin.token", TOKEN + "\n")
        wrong_token = stack.write("wrong.token", "not-the-right-token-at-all\n")
        distributor = stack.distributor(extra=admin_section(token_file))
        server = stack.server(1, extra=admin_section(token_file),
                              extra_clients=f"  ws_dictionary_file: {os.path.join(ETC, 'fields.dict')}\n")
        port, dport = admin_port(server), admin_port(distributor)
        source = stack.source("--items", "5", "--rate", "200", "--duration", "30")
        wait_for_log(source, "items registered")
        client = stack.client(1, "--items", "ITEM000001,ITEM000002", "--duration", "30", "--user", "alice")
        wait_for_log(server, "logged in")

        info = ctl_json(port, "status")
        check(info["daemon"] == "mdcast-server" and info["healthz"]["code"] == 200, f"status: {info}")
        check(info["connections"] == 1 and info["subscriptions"] == 2 and info["items"] == 5, f"counts: {info}")
        check(info["config"]["admin.token_file"] == token_file and info["keys_waiting_for_restart"] == [],
              f"config: {info['config'].get('admin.token_file')} {info['keys_waiting_for_restart']}")
        check(info["version"] and info["commit"] and info["rss_bytes"] > 0 and info["uptime_s"] >= 0, f"{info}")
        code, out, _ = ctl(port, "status")
        check(code == 0 and "healthy" in out and "connections 1" in out, f"status text: {code} {out}")

        clients = ctl_json(port, "clients", "--sort", "rate")
        check(len(clients) == 1 and clients[0]["user"] == "alice" and clients[0]["subscriptions"] == 2,
              f"clients: {clients}")
        code, out, _ = ctl(port, "clients")
        check(code == 0 and "alice" in out and "queued_bytes" in out, f"clients text: {out}")

        items = ctl_json(port, "items")
        check(items["count"] == 5 and len(items["items"]) == 5, f"items: {items}")
        item = ctl_json(port, "item", "ITEM000001")
        check(item["data_state"] == "DATA_OK" and item["sequence"] > 0 and item["fields"], f"item: {item}")
        check(item["subscriber_ids"] == [clients[0]["id"]], f"subscribers: {item['subscriber_ids']}")
        # Fields by name and type from the dictionary (etc/fields.dict), values typed.
        named = {f["name"]: f for f in item["fields"]}
        check(None not in named and named.get("BID", {}).get("type") == "DECIMAL" and
              isinstance(named["BID"]["value"], (int, float)), f"fields: {item['fields']}")
        code, out, _ = ctl(port, "item", "ITEM000001")
        check(code == 0 and "BID" in out and "DECIMAL" in out, f"item text: {out}")
        untouched = ctl_json(port, "item", "ITEM000004")
        check(untouched["subscribers"] == 0, f"ITEM000004 has no subscriber: {untouched}")
        code, out, err = ctl(port, "item", "NO-SUCH-ITEM")
        check(code == 1 and "no cached item" in err, f"unknown item: {code} {err}")

        # Changes need the token: none, a wrong one, and the daemon's own.
        code, _, err = ctl(port, "kick", str(clients[0]["id"]), token_file=os.path.join(stack.dir, "missing"))
        check(code == 1 and "token" in err, f"kick without a token file: {code} {err}")
        code, _, err = ctl(port, "kick", str(clients[0]["id"]), token_file=wrong_token)
        check(code == 1 and "401" in err, f"kick with a wrong token: {code} {err}")
        try:
            urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/kick?id=1", method="POST",
                                                          data=b""), timeout=5)
            check(False, "a POST without a token was accepted")
        except urllib.error.HTTPError as error:
            check(error.code == 401, f"POST without a token: {error.code}")
        kicked = ctl_json(port, "kick", str(clients[0]["id"]), token_file=token_file)
        check(kicked == {"kicked": clients[0]["id"]}, f"kick: {kicked}")
        deadline = time.monotonic() + 5
        closes = []
        while not closes and time.monotonic() < deadline:
            closes = [c for c in json.loads(get(port, "/stats")[1])["recent_closes"] if c["reason"] == "kicked"]
            time.sleep(0.1)
        check(closes and closes[0]["user"] == "alice", f"the kicked client is not in recent_closes: {closes}")
        code, _, err = ctl(port, "kick", "999999", token_file=token_file)
        check(code == 1 and "no open client" in err, f"kick of an unknown id: {code} {err}")

        # reload: one key that reloads, one that needs a restart.
        config_path = os.path.join(stack.dir, "server1.yaml")
        with open(config_path) as f:
            text = f.read()
        with open(config_path, "w") as f:
            f.write(text.replace("clients:\n", "clients:\n  max_connections: 77\n  tls_port: 15999\n", 1))
        code, out, err = ctl(port, "--json", "reload", token_file=token_file)
        answer = json.loads(out)
        check(code == 3 and answer == {"result": "restart_needed", "applied": ["clients.max_connections"],
                                       "failed": [], "restart_needed": ["clients.tls_port"], "errors": []},
              f"reload: {code} {out} {err}")
        check("SIGHUP: applied clients.max_connections: 1000 -> 77" in server.log_text(), "reload not logged")
        waiting = ctl_json(port, "status")["keys_waiting_for_restart"]
        check(waiting == ["clients.tls_port"], f"keys waiting for a restart: {waiting}")
        # A file the daemon refuses: said so with the error, exit 1, counted.
        with open(config_path, "w") as f:
            f.write(text.replace("clients:\n", "clients:\n  max_connections: lots\n", 1))
        code, out, err = ctl(port, "reload", token_file=token_file)
        check(code == 1 and "reload refused" in out and "clients.max_connections" in out, f"bad reload: {code} {out}")
        check(metric(port, "mdcast_server_config_reload_errors_total") == 1 and
              metric(port, "mdcast_server_config_reloads_total") == 2, "reload errors not counted")
        with open(config_path, "w") as f:
            f.write(text)
        code, out, _ = ctl(port, "reload", token_file=token_file)
        check(code == 0 and "applied: clients.max_connections" in out, f"reload back: {code} {out}")

        # The distributor: status, reload, and /stats with services, items and publishers.
        dinfo = ctl_json(dport, "status")
        check(dinfo["daemon"] == "mdcast-distributor" and dinfo["publishers"] == 1 and dinfo["items"] == 5,
              f"distributor status: {dinfo}")
        stats = json.loads(get(dport, "/stats")[1])
        check(len(stats["publishers"]) == 1 and stats["item_count"] == 5 and len(stats["items"]) == 5, f"{stats}")
        check(stats["services"] and stats["services"][0]["state"] == "SERVICE_UP" and
              stats["services"][0]["items"] == 5, f"services: {stats['services']}")
        check(ctl_json(dport, "reload", token_file=token_file)["result"] == "unchanged", "distributor reload")
        wait_for_log(distributor, "SIGHUP: configuration unchanged")
        # Every command against the distributor: its own answer, or "does not apply".
        publishers = ctl_json(dport, "clients")
        check(len(publishers) == 1 and publishers[0]["frames_in"] > 0, f"distributor clients: {publishers}")
        code, out, err = ctl(dport, "clients")
        check(code == 0 and "frames_in" in out, f"distributor clients text: {code} {out} {err}")
        ditems = ctl_json(dport, "items", "--limit", "3")
        check(ditems["count"] == 5 and len(ditems["items"]) == 3, f"distributor items: {ditems}")
        code, out, err = ctl(dport, "items")
        check(code == 0 and "ITEM000004" in out and "MDCAST" in out, f"distributor items text: {code} {out} {err}")
        for command in (["item", "ITEM000001"], ["kick", "1"], ["drain"]):
            code, out, err = ctl(dport, *command, token_file=token_file)
            check(code == 2 and "applies to mdcast-server only" in err and "Traceback" not in err,
                  f"distributor {command}: {code} {out} {err}")
        client.stop()


def test_instance_and_distributor_name_the_packaged_admin_ports():
    """--instance N and --distributor resolve to the packaged configs' fixed ports
    (etc/*.yaml admin.port), here with nothing listening there."""
    for option, port in ((["--instance", "3"], 14203), (["--distributor"], 14200)):
        done = subprocess.run([sys.executable, CTL, *option, "status"], capture_output=True, text=True, timeout=30)
        check(done.returncode == 2 and f"cannot reach 127.0.0.1:{port}" in done.stderr,
              f"{option}: {done.returncode} {done.stderr}")
    done = subprocess.run([sys.executable, CTL, "--instance", "2", "--distributor", "status"], capture_output=True,
                          text=True, timeout=30)
    check(done.returncode == 2 and "not allowed with" in done.stderr, f"both: {done.returncode} {done.stderr}")


def test_drain_moves_sdk_consumers_to_the_other_instance():
    with harness.Stack("ctl-drain") as stack:
        token_file = stack.write("admin.token", TOKEN)
        stack.distributor()
        server1 = stack.server(1, extra=admin_section(token_file))
        stack.server(2)
        source = stack.source("--items", str(len(failover.ITEMS)), "--rate", "5000", "--duration", "60")
        wait_for_log(source, "items registered")
        consumer = harness.sdk_consumer(stack, [1, 2], "--items", ",".join(failover.ITEMS), "--duration", "30",
                                        "--heartbeat-ms", "10000", "--heartbeat-timeout-ms", "30000")
        others = stack.client(1, "--item-count", "5", "--connections", "4", "--duration", "30", name="others")
        harness.wait_for_events(
            consumer, lambda ev: len({e["item"] for e in ev if e["event"] == "update"}) == len(failover.ITEMS),
            what="updates for every item")
        port = admin_port(server1)
        drained_at = time.monotonic_ns()
        answer = ctl_json(port, "drain", "--seconds", "2", token_file=token_file)
        check(answer["draining"] and answer["clients"] >= 2, f"drain: {answer}")
        check(get(port, "/healthz")[0] == 503, "a draining server still says it is healthy")
        _, seconds, server = failover.after_failover(consumer, drained_at, "SERVER_SHUTDOWN")
        check(server == f"127.0.0.1:{stack.client_ports[2]}", f"moved to {server}")
        code = server1.wait(15)
        gone = (time.monotonic_ns() - drained_at) / 1e9
        check(code == 0, f"the drained server exited with {code}")
        check(gone >= 1.8, f"the server was gone {gone:.2f} s after a 2 s drain: not gradual")
        check(f"{answer['clients']} client(s) move away over 2 s" in server1.log_text(), "drain not logged")
        _, summary = failover.finish(consumer)  # no update repeated or out of order
        check(summary["connection_losses"] == 1, f"summary: {summary}")
        others.stop()


if __name__ == "__main__":
    harness.run([test_every_command_against_a_running_stack, test_instance_and_distributor_name_the_packaged_admin_ports,
                 test_drain_moves_sdk_consumers_to_the_other_instance])
