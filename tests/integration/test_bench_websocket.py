"""mdcast-bench fanout --client lean,ws: a short fan-out to binary and to
WebSocket/JSON clients (mdcast-bench-ws-consumer) writes one report naming both,
the WebSocket point with updates delivered, server CPU per update and no errors;
with --ws-conflate-ms the servers stamp JSON messages and the clients ask for
conflation, and the report gives the age of what they show beside conflated
counts that agree with each other and with what was published; and the WebSocket load client fails at once, saying why, when its login, its
connection or its handshake is refused, and reports a connection the server
closes later with the close code and reason. Numbers are not judged:
performance is measured, never asserted."""
import csv
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from harness import Stack, admin_port, check, free_port, run, single_user_file, wait_for_log
from ws_client import ws_section

BENCH = os.environ.get("MDCAST_BENCH", "mdcast-bench")
WS_CONSUMER = os.environ.get("MDCAST_WS_CONSUMER", "mdcast-bench-ws-consumer")
CTL = os.environ.get("MDCAST_CTL", os.path.join(os.path.dirname(__file__), "../../tools/ctl/mdcastctl"))
TOKEN = "bench-admin-token-0123456789"


def test_fanout_with_websocket_clients():
    """--client lean,ws: the binary and the WebSocket client's points in the same tables."""
    out = tempfile.mkdtemp(prefix="mdcast-bench-ws-test-")
    r = subprocess.run([BENCH, "fanout", "--client", "lean,ws", "--servers", "1", "--rates", "2000",
                        "--connections", "4", "--client-processes", "2", "--seconds", "2", "--warmup", "1",
                        "--out", out], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"mdcast-bench failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    folder = os.path.dirname(glob.glob(os.path.join(out, "*", "report.md"))[0])
    with open(os.path.join(folder, "report.md")) as f:
        text = f.read()
    check("**lean (mdcast-client" in text and "**ws (mdcast-bench-ws-consumer" in text,
          f"report does not name the clients:\n{text[:3000]}")
    table = [line for line in text.split("## Fanout", 1)[1].splitlines() if line.startswith(("| lean |", "| ws |"))]
    check(len(table) == 2, f"fanout table: {table}")
    cpu = [line for line in text.split("## CPU per update", 1)[1].splitlines() if line.startswith("| fanout-")]
    check(len(cpu) == 2 and cpu[0].split("|")[1].strip().endswith("-lean")
          and cpu[1].split("|")[1].strip().endswith("-ws"), f"CPU per update table: {cpu}")
    with open(os.path.join(folder, "fanout.csv")) as f:
        rows = {row["client"]: row for row in csv.DictReader(f)}
    check(sorted(rows) == ["lean", "ws"], f"fanout.csv: {rows}")
    row = rows["ws"]
    # Rates are not judged (a loaded machine may fall behind): loss, closes and errors are.
    check(not any(word in row["failures"] for word in ("loss", "closed", "errors", "no summary", "run failed")),
          f"the WebSocket point failed: {row}")
    check(float(row["outbound_per_s"]) > 0 and float(row["server_cpu_us_per_update"]) > 0, f"fanout.csv: {row}")
    check(row["mean_us"] == "", f"a latency was reported for JSON, which carries no stamp: {row}")
    with open(os.path.join(folder, "commands.txt")) as f:
        commands = f.read()
    check(commands.count("mdcast-bench-ws-consumer --server") == 2 and commands.count("mdcast-client --server") == 2,
          commands)
    summaries = []
    for log in glob.glob(os.path.join(folder, "logs", "*-ws", "client*.log")):
        with open(log) as f:
            summaries += [json.loads(line) for line in f if line.startswith('{"type":"summary"')]
    check(len(summaries) == 2, f"client summaries: {summaries}")
    for s in summaries:
        check(s["refreshes"] == 2 * 1000 and s["steady_updates"] > 0, f"client summary: {s}")
        check(s["errors"] == s["gaps"] == s["duplicates"] == s["closed"] == s["unknown_items"] == 0,
              f"client summary: {s}")
    for argv, why in ((["latency", "--client", "ws"], "--client ws runs the fanout scenario"),
                      (["latency", "--client", "lean,sdk"], "compare clients in the fanout scenario only"),
                      (["fanout", "--client", "lean,json"], "--client: unknown json")):
        refused = subprocess.run([BENCH, *argv, "--out", out], capture_output=True, text=True, timeout=30)
        check(refused.returncode != 0 and why in refused.stderr, refused.stderr)
    shutil.rmtree(out)  # kept when a check fails, for its logs


def test_fanout_conflated_websocket_age():
    """--ws-conflate-ms 100: stamped messages, conflated requests, the age columns and counts."""
    out = tempfile.mkdtemp(prefix="mdcast-bench-ws-age-test-")
    r = subprocess.run([BENCH, "fanout", "--client", "ws", "--ws-conflate-ms", "100", "--fanout-items", "50",
                        "--servers", "1", "--rates", "2000", "--connections", "4", "--client-processes", "2",
                        "--seconds", "2", "--warmup", "1", "--out", out], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"mdcast-bench failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    folder = os.path.dirname(glob.glob(os.path.join(out, "*", "report.md"))[0])
    with open(os.path.join(folder, "report.md")) as f:
        text = f.read()
    age = [line for line in text.split("### WebSocket: the age of what the clients show", 1)[-1].splitlines()
           if line.startswith("| 1 | 4 | 50 |")]
    check(len(age) == 1 and "| 100 |" in age[0], f"no age table row:\n{text[-3000:]}")
    with open(os.path.join(folder, "fanout.csv")) as f:
        (row,) = list(csv.DictReader(f))
    check(not any(word in row["failures"] for word in ("loss", "closed", "errors", "no summary", "run failed")),
          f"the point failed: {row}")
    check(row["ws_conflate_ms"] == "100" and int(row["ws_aged"]) > 0, f"fanout.csv: {row}")
    for column in ("ws_age_p50_us", "ws_age_p99_us", "ws_age_p99_9_us", "ws_age_max_us"):
        check(row[column] != "", f"{column} empty: {row}")
    check(float(row["ws_age_p50_us"]) <= float(row["ws_age_p99_us"]) <= float(row["ws_age_max_us"]), f"{row}")
    # The server's run-queue wait, read from /proc: a share of the window, never negative.
    check(row["ws_server_wait_percent"] != "" and 0 <= float(row["ws_server_wait_percent"]) <= 200, f"{row}")
    # Each conflated Update stands for at least one published update, and all of them together
    # for no more than the source published to every connection.
    conflated, stands_for = int(row["ws_conflated"]), int(row["ws_stands_for"])
    check(0 < conflated <= stands_for, f"conflated {conflated}, standing for {stands_for}")
    with open(glob.glob(os.path.join(folder, "logs", "*", "source.out"))[0]) as f:
        sent = next(json.loads(line) for line in f if line.startswith('{"type":"source_summary"'))
    check(stands_for <= 4 * sent["sent"], f"{stands_for} updates stood for, {sent['sent']} published to 4")
    with open(os.path.join(folder, "commands.txt")) as f:
        commands = f.read()
    check(commands.count("--conflate-ms 100") == 2, commands)
    server_yaml = glob.glob(os.path.join(folder, "logs", "*", "server.yaml"))[0]
    with open(server_yaml) as f:
        check("ws_publish_time: true" in f.read(), f"{server_yaml} does not turn clients.ws_publish_time on")
    for log in glob.glob(os.path.join(folder, "logs", "*", "client*.log")):
        with open(log) as f:
            s = next(json.loads(line) for line in f if line.startswith('{"type":"summary"'))
        check(s["conflated"] <= s["stands_for"] and s["steady_represented"] >= s["steady_updates"] > 0
              and s["latency_us"]["count"] > 0 and s["errors"] == s["gaps"] == s["duplicates"] == 0, f"summary: {s}")
    shutil.rmtree(out)


def ws_consumer(port, *args):
    return subprocess.run([WS_CONSUMER, "--server", f"127.0.0.1:{port}", "--item-count", "3", "--duration", "5",
                           *args], capture_output=True, text=True, timeout=30)


def test_load_client_refused_clearly():
    with Stack("ws-bench-refused") as stack:
        users = single_user_file(stack, ["*"])
        stack.distributor()
        port = free_port()
        server = stack.server(1, extra_clients=ws_section(port), extra=f"auth:\n  users_file: {users}\n")
        wait_for_log(server, "WebSocket/JSON on")
        source = stack.source("--items", "3", "--rate", "50", "--duration", "20")
        wait_for_log(source, "items registered")

        r = ws_consumer(port, "--user", "alice", "--password", "wrong")
        check(r.returncode == 1, f"exit {r.returncode}: {r.stderr}")
        check(re.search(r"error: login refused by 127\.0\.0\.1:\d+ for user 'alice': AuthFailed \"", r.stderr),
              f"no clear login error: {r.stderr}")
        check('"type":"summary"' not in r.stderr, f"a refused run printed a summary: {r.stderr}")

        r = ws_consumer(port, "--user", "alice", "--password", "alice-secret", "--duration", "1.5")
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        summary = json.loads(next(line for line in r.stderr.splitlines() if line.startswith('{"type":"summary"')))
        check(summary["refreshes"] == 3 and summary["errors"] == 0, f"accepted login: {summary}")

        r = ws_consumer(free_port(), "--user", "alice")
        check(r.returncode == 1 and re.search(r"error: cannot connect to 127\.0\.0\.1:\d+: Connection refused",
                                              r.stderr), f"exit {r.returncode}: {r.stderr}")

        # An HTTP server that does not upgrade: its answer is shown.
        r = ws_consumer(admin_port(server), "--user", "alice")
        check(r.returncode == 1 and re.search(r"error: handshake refused by 127\.0\.0\.1:\d+: HTTP/1\.1 [45]\d\d",
                                              r.stderr), f"exit {r.returncode}: {r.stderr}")


def ctl(port, token_file, *args):
    done = subprocess.run([sys.executable, CTL, "--admin", f"127.0.0.1:{port}", "--token-file", token_file,
                           "--json", *args], capture_output=True, text=True, timeout=30)
    check(done.returncode == 0, f"mdcastctl {args}: {done.stderr}")
    return json.loads(done.stdout)


def test_load_client_reports_a_close_with_its_code_and_reason():
    """A connection the server closes during the run is counted and explained; the run goes on."""
    with Stack("ws-bench-kicked") as stack:
        token_file = stack.write("admin.token", TOKEN + "\n")
        stack.distributor()
        port = free_port()
        server = stack.server(1, extra_clients=ws_section(port), extra=f"admin:\n  token_file: {token_file}\n")
        admin = admin_port(server)
        source = stack.source("--items", "3", "--rate", "50", "--duration", "30")
        wait_for_log(source, "items registered")
        consumer = subprocess.Popen([WS_CONSUMER, "--server", f"127.0.0.1:{port}", "--item-count", "3",
                                     "--connections", "2", "--duration", "6"], stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 10
            clients = []
            while len(clients) < 2 and time.monotonic() < deadline:
                clients = [c for c in ctl(admin, token_file, "clients") if c["subscriptions"] == 3]
                time.sleep(0.1)
            check(len(clients) == 2, f"clients: {clients}")
            ctl(admin, token_file, "kick", str(clients[0]["id"]))
            _, err = consumer.communicate(timeout=30)
        finally:
            if consumer.poll() is None:
                consumer.kill()
                consumer.wait()
        check(consumer.returncode == 0, f"exit {consumer.returncode}: {err}")
        check(re.search(r"connection \d to 127\.0\.0\.1:\d+: closed by the server: code 1001 reason \"kicked", err),
              f"no close code and reason: {err}")
        summary = json.loads(next(line for line in err.splitlines() if line.startswith('{"type":"summary"')))
        check(summary["closed"] == 1 and summary["refreshes"] == 6 and summary["errors"] == 0, f"summary: {summary}")


if __name__ == "__main__":
    run([test_fanout_with_websocket_clients, test_fanout_conflated_websocket_age, test_load_client_refused_clearly,
         test_load_client_reports_a_close_with_its_code_and_reason])
