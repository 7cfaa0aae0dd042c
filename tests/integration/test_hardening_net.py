"""Hardening of the listeners and the admin endpoint (docs/hardening.md, issue 27
items 1, 5, 7 and 8): descriptors running out pause accept instead of spinning;
the admin endpoint bounds its connections, their time and its answers, checks
every parameter and, with authentication on, keeps clients and data behind the
token; per-user limits; a frame must finish in time, and frames before login
are small. Every limit is tripped here, against the real server on loopback."""
import os
import resource
import socket
import struct
import subprocess
import time
import urllib.error
import urllib.request

from harness import (BIN, FRAME, LOGIN_REQUEST, LOGIN_RESPONSE, PING, SUBSCRIBE, Stack, admin_port,
                     check, frame, free_port, login_frame, metric, pb_string,
                     read_frames_until_close, run, single_user_file, wait_for_log, wait_for_port)
from ws_client import ws_section
from test_hostile_client import CLOSE_FRAME_TOO_LARGE, close_reason

CLOSE_LIMIT_REACHED = 7


def http(port, path, method="GET", token=None):
    headers = {"Authorization": "Bearer " + token} if token else {}
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     headers=headers, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def cpu_seconds(pid):
    """User + system CPU of a process, from /proc (clock ticks to seconds)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def logged_in(port, user="tester", timeout=5):
    """A connection that logged in as `user`; returns (socket, first frame type)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(login_frame(user))
    header = b""
    while len(header) < FRAME.size:
        chunk = s.recv(FRAME.size - len(header))
        if not chunk:
            break
        header += chunk
    kind = FRAME.unpack(header)[1] if len(header) == FRAME.size else None
    return s, kind


def test_descriptors_running_out_pause_accept():
    """Item 1: with fewer descriptors than connections, accept pauses (counted, logged
    rarely) instead of spinning a core and flooding the log; it resumes by itself."""
    with Stack("emfile") as stack:
        server = stack.server(1, extra_clients="  max_connections: 1100\n  login_timeout_ms: 60000")
        port = stack.client_ports[1]
        admin = admin_port(server)
        soft, hard = resource.prlimit(server.popen.pid, resource.RLIMIT_NOFILE)
        resource.prlimit(server.popen.pid, resource.RLIMIT_NOFILE, (96, hard))
        log_before = os.path.getsize(server.log_path)
        sockets = []
        for _ in range(300):
            try:
                sockets.append(socket.create_connection(("127.0.0.1", port), timeout=2))
            except OSError:
                break
        time.sleep(0.5)
        cpu_before = cpu_seconds(server.popen.pid)
        time.sleep(2)
        cpu = cpu_seconds(server.popen.pid) - cpu_before
        logged = os.path.getsize(server.log_path) - log_before
        for s in sockets:
            s.close()
        check(cpu < 0.5, f"the server spent {cpu:.2f} s of CPU in 2 s out of descriptors")
        check(logged < 64 << 10, f"{logged} bytes of log in 2.5 s out of descriptors")
        resource.prlimit(server.popen.pid, resource.RLIMIT_NOFILE, (soft, hard))
        deadline = time.monotonic() + 10
        kind = None
        while kind != LOGIN_RESPONSE and time.monotonic() < deadline:
            try:
                s, kind = logged_in(port)
                s.close()
            except OSError:
                time.sleep(0.2)
        check(kind == LOGIN_RESPONSE, "no login answered once descriptors were free again")
        check(metric(admin, "mdcast_server_accept_paused_total") >= 1, "pause not counted")
        check("not accepting for 100 ms" in server.log_text(), "pause not logged")


def test_check_config_refuses_more_connections_than_descriptors():
    """Item 1: --check-config compares max_connections with RLIMIT_NOFILE."""
    with Stack("nofile") as stack:
        cfg = stack.write("server.yaml", "clients:\n  max_connections: 1100\n")

        def limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))

        out = subprocess.run([BIN["server"], "--check-config", "--config", cfg], preexec_fn=limit,
                             capture_output=True, text=True, timeout=30)
        check(out.returncode == 2, f"exit {out.returncode}: {out.stdout}{out.stderr}")
        check("clients.max_connections" in out.stderr and "RLIMIT_NOFILE" in out.stderr,
              f"no descriptor-limit error: {out.stderr}")
        ok = subprocess.run([BIN["server"], "--check-config", "--config", cfg], capture_output=True,
                            text=True, timeout=30)
        check(ok.returncode == 0, f"refused with a large enough limit: {ok.stderr}")


def test_admin_connections_are_bounded_in_number_and_time():
    """Item 1: half-open admin requests trickling bytes are closed after
    admin.request_timeout_ms; beyond admin.max_connections new ones are refused."""
    with Stack("admin-slow") as stack:
        server = stack.server(1, extra="admin:\n  max_connections: 4\n  request_timeout_ms: 1000")
        admin = admin_port(server)
        slow = [socket.create_connection(("127.0.0.1", admin), timeout=5) for _ in range(10)]
        started = time.monotonic()
        open_ones = list(slow)
        while open_ones and time.monotonic() - started < 5:
            for s in list(open_ones):
                try:
                    s.sendall(b"G")
                    s.settimeout(0.05)
                    if s.recv(100) == b"":
                        open_ones.remove(s)
                except socket.timeout:
                    pass
                except OSError:
                    open_ones.remove(s)
            time.sleep(0.2)
        elapsed = time.monotonic() - started
        check(not open_ones, f"{len(open_ones)} trickling admin connections still open after 5 s")
        check(elapsed < 3, f"trickling admin connections held for {elapsed:.1f} s")
        check(metric(admin, "mdcast_server_admin_timeouts_total") >= 4, "timeouts not counted")
        check(metric(admin, "mdcast_server_admin_connections_refused_total") >= 6,
              "refused admin connections not counted")
        check("admin.request_timeout_ms" in server.log_text(), "timeout not logged")
        for s in slow:
            s.close()


def test_admin_parameters_are_checked_and_answers_bounded():
    """Item 7: /items?limit is capped, every parameter is a checked number, and
    /drain?seconds=-1 is refused instead of cutting every client at once."""
    with Stack("admin-params") as stack:
        token = "0123456789abcdef0123"
        token_file = stack.write("admin.token", token)
        server = stack.server(1, extra=f"admin:\n  token_file: {token_file}\n"
                                        "  max_items_per_answer: 50")
        admin = admin_port(server)
        for path in ("/items?limit=51", "/items?limit=abc", "/items?limit=-1", "/items?bogus=1"):
            code, body = http(admin, path)
            check(code == 400, f"GET {path}: {code} {body}")
        check(http(admin, "/items?limit=50")[0] == 200, "a limit within the cap refused")
        for path in ("/drain?seconds=-1", "/drain?seconds=1e9", "/kick?id=x", "/reload?x=1"):
            code, body = http(admin, path, "POST", token)
            check(code == 400, f"POST {path}: {code} {body}")
        s, kind = logged_in(stack.client_ports[1])
        check(kind == LOGIN_RESPONSE, "client not logged in")
        time.sleep(0.3)
        check(server.popen.poll() is None, "the server exited after a refused drain")
        check(http(admin, "/healthz")[0] in (200, 503), "admin endpoint gone")
        s.settimeout(0.5)
        try:
            check(s.recv(100) != b"", "the client was cut after a refused drain")
        except socket.timeout:
            pass
        s.close()


def test_admin_reads_need_the_token_when_auth_is_on():
    """Item 7: with a users file, /stats and /items (clients, item fields) need the
    admin token; /metrics and /healthz stay open for scrapers and probes."""
    with Stack("admin-auth") as stack:
        users = single_user_file(stack, ["*"])
        token = "0123456789abcdef0123"
        token_file = stack.write("admin.token", token)
        server = stack.server(1, extra=f"auth:\n  users_file: {users}\n"
                                        f"admin:\n  token_file: {token_file}")
        admin = admin_port(server)
        for path in ("/stats", "/items", "/items?name=X"):
            code, body = http(admin, path)
            check(code == 401, f"GET {path} without the token: {code} {body[:200]}")
            check(http(admin, path, token="wrong-token-000000")[0] == 401, f"{path}: wrong token")
        check(http(admin, "/stats", token=token)[0] == 200, "/stats refused with the token")
        check(http(admin, "/items", token=token)[0] == 200, "/items refused with the token")
        check(http(admin, "/metrics")[0] == 200, "/metrics needs a token")
        check(metric(admin, "mdcast_server_admin_refused_total") >= 6, "refusals not counted")


def test_one_user_cannot_take_every_connection():
    """Item 5: clients.max_connections_per_user closes a login beyond it with
    limit_reached; another user still gets in."""
    with Stack("per-user") as stack:
        server = stack.server(1, extra_clients="  max_connections_per_user: 2")
        port = stack.client_ports[1]
        admin = admin_port(server)
        held = [logged_in(port, "alice") for _ in range(2)]
        check(all(kind == LOGIN_RESPONSE for _, kind in held), "alice's first two refused")
        third = socket.create_connection(("127.0.0.1", port), timeout=5)
        third.sendall(login_frame("alice"))
        check(close_reason(read_frames_until_close(third)) == CLOSE_LIMIT_REACHED,
              "a third connection of alice not closed limit_reached")
        bob, kind = logged_in(port, "bob")
        check(kind == LOGIN_RESPONSE, "bob refused while alice is at her limit")
        check(metric(admin, "mdcast_server_user_connections_refused_total") == 1, "not counted")
        check("max_connections_per_user" in server.log_text(), "refusal not logged")
        for s, _ in held:
            s.close()
        bob.close()


def subscribe(service, names):
    body = pb_string(2, service) + b"".join(pb_string(3, name) for name in names)
    return frame(SUBSCRIBE, body)


def test_one_user_cannot_take_every_subscription():
    """Item 5: clients.max_subscriptions_per_user counts over all the user's
    connections; the item beyond it is closed LIMIT_REACHED."""
    with Stack("per-user-subs") as stack:
        stack.distributor()
        server = stack.server(1, extra_clients="  max_subscriptions_per_user: 3")
        source = stack.source("--items", "10", "--rate", "50", "--duration", "20")
        wait_for_log(source, "items registered")
        port = stack.client_ports[1]
        admin = admin_port(server)
        first_conn, _ = logged_in(port, "alice")
        first_conn.sendall(subscribe("MDCAST", ["ITEM000000", "ITEM000001"]))
        time.sleep(1)
        second, _ = logged_in(port, "alice")
        second.sendall(subscribe("MDCAST", ["ITEM000002", "ITEM000003"]))
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if metric(admin, "mdcast_server_user_subscriptions_refused_total") >= 1:
                break
            time.sleep(0.1)
        check(metric(admin, "mdcast_server_user_subscriptions_refused_total") == 1,
              "the fourth subscription of alice not refused (or more refused)")
        second.settimeout(2)
        data = b""
        try:
            while b"max_subscriptions_per_user" not in data:
                chunk = second.recv(65536)
                if not chunk:
                    break
                data += chunk
        except socket.timeout:
            pass
        check(b"max_subscriptions_per_user" in data, "the refusal not sent to the client")
        first_conn.close()
        second.close()


def dribble_until_closed(port, seconds=6):
    """Logs in, starts a 60 KB frame and sends one more byte of it every 0.5 s.
    Returns the seconds until the peer closed, or None if it never did."""
    s, kind = logged_in(port)
    check(kind == LOGIN_RESPONSE, "not logged in")
    s.sendall(FRAME.pack(60000, PING, 0))  # a type both ports take
    started = time.monotonic()
    with s:
        while time.monotonic() - started < seconds:
            try:
                s.sendall(b"\x00")
                s.settimeout(0.5)
                if s.recv(65536) == b"":
                    return time.monotonic() - started
            except socket.timeout:
                continue
            except OSError:
                return time.monotonic() - started
    return None


def test_a_frame_must_finish_in_time():
    """Item 8: a logged-in peer dribbling a large frame is closed frame_timeout,
    on the server's client port and the distributor's publisher port."""
    with Stack("slow-frame") as stack:
        distributor = stack.distributor(extra_publishers="  frame_timeout_ms: 1000")
        server = stack.server(1, extra_clients="  frame_timeout_ms: 1000")
        for name, process, port in (("server", server, stack.client_ports[1]),
                                    ("distributor", distributor, stack.publisher_port)):
            elapsed = dribble_until_closed(port)
            check(elapsed is not None and elapsed < 3,
                  f"{name}: a dribbled frame kept the connection open ({elapsed} s)")
            check(metric(admin_port(process), f'mdcast_{name}_closes_total{{reason="frame_timeout"}}') == 1,
                  f"{name}: frame_timeout not counted")


def test_frames_before_login_are_small():
    """Item 8: before its login is accepted a peer may send only
    max_login_frame_bytes; a 60 KB header is refused at once."""
    with Stack("prelogin") as stack:
        distributor = stack.distributor()
        ws_port = free_port()
        server = stack.server(1, extra_clients=ws_section(ws_port))
        for name, process, port in (("server", server, stack.client_ports[1]),
                                    ("distributor", distributor, stack.publisher_port)):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(FRAME.pack(60000, LOGIN_REQUEST, 0))
            frames = read_frames_until_close(s, timeout=3)
            check(close_reason(frames) == CLOSE_FRAME_TOO_LARGE, f"{name}: 60 KB login not refused: {frames}")
            check(metric(admin_port(process), f'mdcast_{name}_closes_total{{reason="frame_too_large"}}') == 1,
                  f"{name}: not counted")
            ok, kind = logged_in(port)
            check(kind == LOGIN_RESPONSE, f"{name}: a normal login refused")
            ok.close()
        # The WebSocket port: a 60 KB message before the login is refused from its header (1009).
        s = ws_upgraded(ws_port)
        s.sendall(bytes([0x81, 0xFE]) + struct.pack(">H", 60000) + b"\x11\x22\x33\x44" + b"x" * 100)
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        s.close()
        check(data[:1] == b"\x88" and struct.unpack(">H", data[2:4])[0] == 1009,
              f"WebSocket: 60 KB message before login not closed 1009: {data[:80]!r}")
        check(b"before the login" in data, f"WebSocket: close reason {data[:120]!r}")


def ws_upgraded(port, receive_buffer=0):
    """A raw socket past the WebSocket upgrade (a small receive buffer: a client that lags)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if receive_buffer:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /WebSocket HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
              b"Sec-WebSocket-Protocol: tr_json2\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    check(b" 101 " in head, f"no upgrade: {head!r}")
    return s


def masked_ping(payload):
    key = b"\x11\x22\x33\x44"
    return bytes([0x89, 0x80 | len(payload)]) + key + bytes(c ^ key[i % 4] for i, c in enumerate(payload))


def test_websocket_pongs_count_against_the_output_bound():
    """Item 10 (part): a WebSocket client that sends 8 MB of pings and never reads
    is closed slow_consumer once the pongs queued for it pass output.max_bytes."""
    with Stack("ws-pings") as stack:
        ws_port = free_port()
        server = stack.server(1, extra_clients=ws_section(ws_port),
                              extra="output:\n  guaranteed_bytes: 16384\n  max_bytes: 65536")
        wait_for_port(ws_port, server)
        s = ws_upgraded(ws_port, receive_buffer=4096)
        burst = masked_ping(b"p" * 125) * 512  # 67 KB
        sent, closed = 0, False
        started = time.monotonic()
        s.settimeout(1)
        while sent < 8 << 20 and time.monotonic() - started < 10:
            try:
                s.sendall(burst)
                sent += len(burst)
            except (socket.timeout, OSError):
                closed = True
                break
        admin = admin_port(server)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and \
                metric(admin, 'mdcast_server_closes_total{reason="slow_consumer"}') < 1:
            time.sleep(0.1)
        s.close()
        check(metric(admin, 'mdcast_server_closes_total{reason="slow_consumer"}') == 1,
              f"a client that sent {sent} bytes of pings and read no pong was not closed "
              f"slow_consumer (send failed: {closed})")


if __name__ == "__main__":
    run([test_descriptors_running_out_pause_accept,
         test_check_config_refuses_more_connections_than_descriptors,
         test_admin_connections_are_bounded_in_number_and_time,
         test_admin_parameters_are_checked_and_answers_bounded,
         test_admin_reads_need_the_token_when_auth_is_on,
         test_one_user_cannot_take_every_connection,
         test_one_user_cannot_take_every_subscription,
         test_a_frame_must_finish_in_time,
         test_frames_before_login_are_small,
         test_websocket_pongs_count_against_the_output_bound])
