"""Logs an operator can search: timestamps carry the UTC offset; log.format json
writes one JSON object per line; when stderr is the journal (JOURNAL_STREAM names
it), every line starts with the syslog priority of its level. Text a peer sends
(a login's user, application and position) is escaped in log lines: a newline
cannot forge a line, a control byte cannot reach the terminal."""
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time

from harness import (BIN, LOGIN_REQUEST, Stack, check, frame, free_port, pb_string, run,
                     wait_for_log)


def run_server(directory, extra, journal=False):
    """Starts a server on free ports, stops it once it runs, returns its stderr lines."""
    config = os.path.join(directory, "server.yaml")
    with open(config, "w") as f:
        f.write(f"clients:\n  port: {free_port()}\nbackbone:\n  group: 239.255.251.7\n  port: 15999\n{extra}")
    log_path = os.path.join(directory, "stderr.log")
    with open(log_path, "wb") as log:
        env = dict(os.environ)
        if journal:
            status = os.fstat(log.fileno())
            env["JOURNAL_STREAM"] = f"{status.st_dev}:{status.st_ino}"
        process = subprocess.Popen([BIN["server"], "--config", config], stdout=log, stderr=log, env=env)
        try:
            deadline = time.monotonic() + 10
            while "admin http on" not in open(log_path).read() and time.monotonic() < deadline:
                time.sleep(0.05)
            process.send_signal(signal.SIGTERM)
            check(process.wait(10) == 0, "the server did not stop cleanly")
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    return [line for line in open(log_path).read().splitlines() if line.strip()]


def test_text_lines_carry_the_utc_offset():
    with tempfile.TemporaryDirectory(prefix="mdcast-logs-") as directory:
        lines = run_server(directory, "")
        check(lines and all(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}[+-]\d\d:\d\d (info|warn|debug|error)", line)
                            for line in lines), f"timestamps without a UTC offset: {lines[:3]}")
        check(not any(line.startswith("<") for line in lines), "priority prefixes outside the journal")


def test_json_lines_and_journal_priorities():
    with tempfile.TemporaryDirectory(prefix="mdcast-logs-") as directory:
        lines = run_server(directory, "log:\n  format: json\n", journal=True)
        check(lines, "no log lines")
        for line in lines:
            match = re.match(r"^<(\d)>(\{.*\})$", line)
            check(match, f"not <N>{{json}}: {line}")
            entry = json.loads(match.group(2))
            check(set(entry) == {"time", "level", "process", "component", "message"}, f"fields: {entry}")
            expected = {"trace": "7", "debug": "7", "info": "6", "warning": "4", "error": "3", "critical": "2"}
            check(match.group(1) == expected[entry["level"]], f"priority {match.group(1)} for {entry['level']}")
            check(entry["process"] == "mdcast-server.1" and re.search(r"[+-]\d\d:\d\d$", entry["time"]), f"{entry}")
        check(any("admin http on" in json.loads(line[3:])["message"] for line in lines), "admin line missing")


FORGED = "2026-01-01T00:00:00.000000+00:00 info  [mdcast-server.1] [client] admin logged in"


def test_peer_text_is_escaped_in_log_lines():
    with Stack("logescape") as stack:
        stack.distributor()
        server = stack.server(1)
        wait_for_log(server, "admin http on")
        login = frame(LOGIN_REQUEST, pb_string(1, "eve\n" + FORGED) +
                      pb_string(2, "app\x1b[31mred\\x41") + pb_string(3, "desk\r\x07\x7f"))
        with socket.create_connection(("127.0.0.1", stack.client_ports[1]), timeout=5) as sock:
            sock.sendall(login)
            sock.recv(4096)  # the login response: the login was logged by then
            wait_for_log(server, "logged in")
        text = server.log_text()
        lines = text.splitlines()
        check(not any(line.startswith(FORGED[:20]) for line in lines), f"a forged line: {text[-1500:]}")
        check("\x1b" not in text and "\x07" not in text and "\x7f" not in text and "\r" not in text,
              "a raw control byte in the log")
        # The forged user name itself holds "logged in": the close line (written
        # as the socket goes) must not count as a second login line.
        logged = [line for line in lines if "logged in: application=" in line]
        check(len(logged) == 1 and "user=eve\\n2026-01-01" in logged[0] and
              "application=app\\x1b[31mred\\\\x41" in logged[0] and
              "position=desk\\r\\x07\\x7f" in logged[0], f"login line: {logged}")


if __name__ == "__main__":
    run([test_text_lines_carry_the_utc_offset, test_json_lines_and_journal_priorities,
         test_peer_text_is_escaped_in_log_lines])
