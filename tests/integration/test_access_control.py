"""Authentication and entitlements (docs/access-control.md), black-box: real
servers and a distributor with a users file, raw-protocol logins, the tools
with --password-file / MDCAST_PASSWORD, /metrics, and a SIGHUP reload that
revokes a subscription while another keeps flowing."""
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request

from harness import (BIN, LOGIN_REQUEST, LOGIN_RESPONSE, CLOSE, Stack, admin_port, check, frame, metric,
                     password_hash, pb_string, read_frames_until_close, run, wait_for_log)
from streams import by_item, messages
from wire import fields, first, split_frames

PASSWD = os.environ.get("MDCAST_PASSWD", "mdcast-passwd")
STATUS_AUTH_FAILED, STATUS_LIMIT_REACHED = 10, 7
CLOSE_AUTH_FAILED = 3


HASHES = {}


def users_yaml(alice_items='["ITEM000001", "ITEM000002"]', with_bob=True):
    for user, password in (("alice", "alice-secret"), ("bob", "bob-secret"), ("pub", "pub-secret")):
        HASHES.setdefault(user, password_hash(password))
    text = f"""
groups:
  readers:
    allow:
      - service: MDCAST
        items: {alice_items}
users:
  alice:
    password: "{HASHES['alice']}"
    groups: [readers]
  pub:
    password: "{HASHES['pub']}"
"""
    if with_bob:
        text += f"""  bob:
    password: "{HASHES['bob']}"
    allow:
      - service: "*"
"""
    return text


def auth_section(stack, burst=5, refill_ms=60000):
    path = os.path.join(stack.dir, "users.yaml")
    if not os.path.exists(path):
        stack.write("users.yaml", users_yaml())
    return f"auth:\n  users_file: {path}\n  peer_failure_burst: {burst}\n  peer_failure_refill_ms: {refill_ms}\n"


def raw_login(port, user, password):
    """(LoginResponse fields, Close fields or None) of one raw login."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(frame(LOGIN_REQUEST, pb_string(1, user) + pb_string(2, "auth-test") + pb_string(4, password)))
        sock.settimeout(5)
        data = b""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            got, _ = split_frames(data)
            if any(kind == LOGIN_RESPONSE for kind, _ in got):
                response = fields(next(body for kind, body in got if kind == LOGIN_RESPONSE))
                if first(response, 1):  # accepted: the server keeps the connection
                    return response, None
                rest = read_frames_until_close(sock, timeout=3)
                closes = [fields(body) for kind, body in got + rest if kind == CLOSE]
                return response, closes[0] if closes else None
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    raise AssertionError(f"no login response from {port} for {user}")


def status_of(response):
    status = fields(first(response, 2, b""))
    return first(status, 3), first(status, 4, b"").decode()


def test_wrong_password_refused_and_counted_right_one_accepted():
    with Stack("auth-login") as stack:
        stack.distributor()
        server = stack.server(1, extra=auth_section(stack))
        wait_for_log(server, "authentication on: 3 users")
        port, admin = stack.client_ports[1], admin_port(server)
        for user, password in (("alice", "wrong"), ("mallory", "alice-secret")):
            response, close = raw_login(port, user, password)
            code, text = status_of(response)
            check(not first(response, 1) and code == STATUS_AUTH_FAILED and text == "unknown user or wrong password",
                  f"{user}: refusal {response}")
            check(close and first(close, 1) == CLOSE_AUTH_FAILED, f"{user}: close {close}")
        response, close = raw_login(port, "alice", "alice-secret")
        check(first(response, 1) == 1 and close is None, f"right password refused: {response}")
        check(metric(admin, "mdcast_server_logins_failed_total") == 2, "failed logins not counted")
        check(metric(admin, "mdcast_server_logins_accepted_total") == 1, "accepted login not counted")
        check(metric(admin, 'mdcast_server_closes_total{reason="auth_failed"}') == 2, "auth_failed closes not counted")
        check("client login refused" in server.log_text(), "refusal not logged")
        check("alice-secret" not in server.log_text(), "a password reached the log")


def test_failed_logins_are_limited_per_peer_address():
    with Stack("auth-limit") as stack:
        stack.distributor()
        server = stack.server(1, extra=auth_section(stack, burst=3))
        port, admin = stack.client_ports[1], admin_port(server)
        for _ in range(3):
            status = status_of(raw_login(port, "alice", "guess")[0])
            check(status[0] == STATUS_AUTH_FAILED, f"attempt refused for the wrong reason: {status}")
        # Over the limit: even the right password is refused, unchecked.
        code, text = status_of(raw_login(port, "alice", "alice-secret")[0])
        check(code == STATUS_LIMIT_REACHED and "too many failed logins from 127.0.0.1" in text, f"not limited: {text}")
        check(metric(admin, "mdcast_server_logins_rate_limited_total") == 1, "rate-limited login not counted")
        check(metric(admin, "mdcast_server_auth_hashes_total") == 3, "the limited login was hashed")


def test_entitlement_denial_while_an_entitled_item_flows():
    with Stack("auth-entitle") as stack:
        stack.distributor()
        server = stack.server(1, extra=auth_section(stack))
        admin = admin_port(server)
        source = stack.source("--items", "5", "--rate", "200", "--duration", "4")
        wait_for_log(source, "items registered")
        password_file = stack.write("alice.password", "alice-secret\n")
        client = stack.client(1, "--items", "ITEM000001,ITEM000003", "--duration", "2", "--user", "alice",
                              "--password-file", password_file)
        check(client.wait(15) == 0, "client exit code")
        items = by_item(messages(client))
        denied = items.get("ITEM000003", [])
        check(len(denied) == 1 and denied[0]["type"] == "status" and denied[0]["stream"] == "closed" and
              denied[0]["code"] == "NOT_ENTITLED" and denied[0]["text"] == "not entitled", f"ITEM000003: {denied}")
        allowed = [m["type"] for m in items.get("ITEM000001", [])]
        check(allowed[:1] == ["refresh"] and allowed.count("update") > 10, f"ITEM000001: {allowed[:5]}...")
        check(metric(admin, "mdcast_server_not_entitled_total") == 1, "denial not counted")
        # The same user with a wrong password, from the environment: the tool says why and fails.
        env_client = stack.start("wrong", [BIN["client"], "--server", f"127.0.0.1:{stack.client_ports[1]}",
                                           "--items", "ITEM000001", "--duration", "2", "--user", "alice"])
        check(env_client.wait(15) != 0, "a refused client exited 0")
        check("login refused: unknown user or wrong password" in env_client.log_text(), "refusal not reported")


def test_reload_revokes_a_subscription_and_removes_a_user():
    with Stack("auth-reload") as stack:
        stack.distributor()
        server = stack.server(1, extra=auth_section(stack))
        admin = admin_port(server)
        source = stack.source("--items", "5", "--rate", "200", "--duration", "8")
        wait_for_log(source, "items registered")
        os.environ["MDCAST_PASSWORD"] = "alice-secret"
        try:
            alice = stack.client(1, "--items", "ITEM000001,ITEM000002", "--duration", "5", "--user", "alice",
                                 name="alice")
            os.environ["MDCAST_PASSWORD"] = "bob-secret"
            bob = stack.client(1, "--items", "ITEM000004", "--duration", "5", "--user", "bob", name="bob")
        finally:
            del os.environ["MDCAST_PASSWORD"]
        time.sleep(1.5)
        stack.write("users.yaml", users_yaml(alice_items='["ITEM000002"]', with_bob=False))
        os.kill(server.popen.pid, signal.SIGHUP)
        wait_for_log(server, "SIGHUP: access rules applied: 1 subscription(s) closed not entitled, 1 client(s) closed")
        check("users removed: bob" in server.log_text() and "entitlements changed: alice" in server.log_text(),
              "reload changes not logged")
        check(alice.wait(15) == 0, "alice exit code")
        items = by_item(messages(alice))
        revoked = items["ITEM000001"]
        closed_at = next((i for i, m in enumerate(revoked) if m["type"] == "status"), None)
        check(closed_at is not None and revoked[closed_at]["code"] == "NOT_ENTITLED" and
              revoked[closed_at]["stream"] == "closed" and revoked[closed_at]["text"] == "not entitled",
              f"ITEM000001 not closed: {revoked[-3:]}")
        check(closed_at == len(revoked) - 1, "ITEM000001 got data after it was revoked")
        kept = items["ITEM000002"]
        check(all(m["type"] != "status" for m in kept), f"ITEM000002 got a status: {kept[-2:]}")
        updates_after = sum(1 for m in kept if m["type"] == "update") - \
            sum(1 for m in revoked if m["type"] == "update")
        check(updates_after > 50, f"ITEM000002 did not keep flowing after the reload ({updates_after})")
        bob.wait(15)
        check("user removed from the users file" in bob.log_text(), "bob was not told why he was closed")
        check(metric(admin, "mdcast_server_entitlement_revocations_total") == 1, "revocation not counted")
        check(metric(admin, "mdcast_server_users_removed_total") == 1, "removed user not counted")
        # A broken file is refused and the running rules stay.
        stack.write("users.yaml", "users:\n  alice:\n    password: nope\n")
        os.kill(server.popen.pid, signal.SIGHUP)
        wait_for_log(server, "keeping the running users and rules")
        check(re.search(r"users\.yaml:3:15: key 'users\.alice\.password': not a password hash", server.log_text()),
              "the bad file's error has no file:line")
        check(metric(admin, "mdcast_server_auth_reload_errors_total") == 1, "reload error not counted")


def test_publisher_with_a_wrong_password_is_refused():
    with Stack("auth-publisher") as stack:
        distributor = stack.distributor(extra=auth_section(stack))
        admin = admin_port(distributor)
        wrong = stack.write("wrong.password", "guess\n")
        refused = stack.source("--items", "2", "--rate", "10", "--duration", "1", "--user", "pub",
                               "--password-file", wrong, name="refused")
        check(refused.wait(15) != 0, "a refused source exited 0")
        check("login refused: unknown user or wrong password" in refused.log_text(), "source not told why")
        right = stack.write("right.password", "pub-secret\n")
        accepted = stack.source("--items", "2", "--rate", "10", "--duration", "1", "--user", "pub",
                                "--password-file", right, name="accepted")
        wait_for_log(accepted, "items registered")
        check(accepted.wait(15) == 0, "the source with the right password failed")
        check(metric(admin, "mdcast_distributor_logins_failed_total") == 1, "failed publisher login not counted")
        check(metric(admin, "mdcast_distributor_logins_accepted_total") == 1, "publisher login not counted")


if __name__ == "__main__":
    run([test_wrong_password_refused_and_counted_right_one_accepted,
         test_failed_logins_are_limited_per_peer_address,
         test_entitlement_denial_while_an_entitled_item_flows,
         test_reload_revokes_a_subscription_and_removes_a_user,
         test_publisher_with_a_wrong_password_is_refused])
