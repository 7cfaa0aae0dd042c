"""Daemon lifecycle: SIGHUP reloads what it can and says so, a bad file keeps the
running configuration; SIGTERM tells clients (Close shutdown) behind their queued
output and exits as soon as they are flushed, or when shutdown.grace_ms ends for a
client that does not read; a second SIGTERM exits at once; log.file rotates."""
import contextlib
import glob
import os
import re
import signal
import socket
import time

from harness import (CLOSE, LOGIN_RESPONSE, PING, PONG, Stack, admin_port, check, frame, login_frame, metric,
                     pb_string, read_frames_until_close, run, split_frames, stuck_subscriber, wait_for_log)
from wire import fields, first

CLOSE_FRAME_TOO_LARGE, CLOSE_SHUTDOWN, CLOSE_LIMIT_REACHED = 2, 6, 7


def connect(port):
    return socket.create_connection(("127.0.0.1", port), timeout=5)


SMALL_SEND_BUFFER = "output:\n  tcp_send_buffer_bytes: 4096\n"  # see stuck_subscriber


def close_reason(frames):
    closes = [body for kind, body in frames if kind == CLOSE]
    return first(fields(closes[-1]), 1) if closes else None


def reload_with(stack, process, name, text):
    with open(os.path.join(stack.dir, name), "a") as f:
        f.write(text)
    process.popen.send_signal(signal.SIGHUP)


def test_sighup_applies_reloadable_keys_and_names_the_rest():
    with Stack("sighup") as stack:
        server = stack.server(1)
        port = stack.client_ports[1]
        reload_with(stack, server, "server1.yaml", "log:\n  level: debug\n")
        wait_for_log(server, 'SIGHUP: applied log.level: "info" -> "debug"')
        # clients.max_connections applies to the next connection; the address needs a restart.
        text = open(os.path.join(stack.dir, "server1.yaml")).read()
        text = text.replace("clients:\n", "clients:\n  max_connections: 1\n  address: 127.0.0.2\n", 1)
        stack.write("server1.yaml", text)
        server.popen.send_signal(signal.SIGHUP)
        wait_for_log(server, "SIGHUP: applied clients.max_connections: 1000 -> 1")
        wait_for_log(server, 'SIGHUP: clients.address changed ("127.0.0.1" -> "127.0.0.2") but needs a restart')
        first_client = connect(port)
        first_client.sendall(login_frame())
        time.sleep(0.2)
        second = connect(port)
        check(close_reason(read_frames_until_close(second)) == CLOSE_LIMIT_REACHED,
              "the reloaded max_connections was not applied")
        # A broken file is reported and the running configuration stays.
        stack.write("server1.yaml", text.replace("clients:\n", "clients:\n  max_conections: 5\n", 1))
        server.popen.send_signal(signal.SIGHUP)
        wait_for_log(server, "keeping the running configuration")
        check("did you mean 'clients.max_connections'" in server.log_text(), "the error does not help")
        check(server.popen.poll() is None, "a bad reload stopped the server")
        first_client.close()


def publisher_login(port):
    """A raw publisher connection that logged in; returns (socket, the limit its LoginResponse told)."""
    s = connect(port)
    s.sendall(login_frame())
    data, got = b"", []
    deadline = time.monotonic() + 10
    while not got and time.monotonic() < deadline:
        chunk = s.recv(65536)
        check(chunk, "the distributor closed a publisher's login")
        data += chunk
        got = [body for kind, body in split_frames(data)[0] if kind == LOGIN_RESPONSE]
    check(got, "no LoginResponse")
    return s, first(fields(got[0]), 5)


def big_ping(size):
    """A Ping whose body (an unknown field the distributor skips) is `size` bytes: answered with a Pong."""
    return frame(PING, pb_string(15, "x" * (size - 6)))


def test_a_reloaded_publisher_frame_limit_applies_to_new_logins():
    """publishers.max_frame_bytes reloads: a publisher that logs in after the SIGHUP is told the
    new limit and held to it; one logged in before keeps the limit it was told."""
    with Stack("reload-frame-limit") as stack:
        distributor = stack.distributor()
        before, told_before = publisher_login(stack.publisher_port)
        check(told_before == 1048576, f"limit told before the reload: {told_before}")
        text = open(os.path.join(stack.dir, "distributor.yaml")).read()
        stack.write("distributor.yaml", text.replace("publishers:\n", "publishers:\n  max_frame_bytes: 65536\n", 1))
        distributor.popen.send_signal(signal.SIGHUP)
        wait_for_log(distributor, "SIGHUP: applied publishers.max_frame_bytes: 1048576 -> 65536")
        after, told_after = publisher_login(stack.publisher_port)
        check(told_after == 65536, f"limit told after the reload: {told_after}")
        # 100 KB: over the new limit, under the old one.
        before.sendall(big_ping(100_000))
        before.settimeout(5)
        answer = before.recv(65536)
        check([kind for kind, _ in split_frames(answer)[0]][:1] == [PONG],
              f"the publisher logged in before the reload was not answered: {answer[:40]!r}")
        after.sendall(big_ping(100_000))
        check(close_reason(read_frames_until_close(after)) == CLOSE_FRAME_TOO_LARGE,
              "the publisher logged in after the reload was not held to the new limit")
        check(metric(admin_port(distributor), 'mdcast_distributor_closes_total{reason="frame_too_large"}') == 1,
              "frame_too_large not counted once")
        before.close()


def test_sigterm_tells_clients_and_exits_when_they_are_flushed():
    with Stack("sigterm") as stack:
        server = stack.server(1, extra="shutdown:\n  grace_ms: 20000")
        clients = [connect(stack.client_ports[1]) for _ in range(3)]
        for c in clients:
            c.sendall(login_frame())
        wait_for_log(server, "logged in")
        start = time.monotonic()
        server.popen.send_signal(signal.SIGTERM)
        for c in clients:
            check(close_reason(read_frames_until_close(c)) == CLOSE_SHUTDOWN, "no Close(shutdown) sent")
        check(server.wait(10) == 0, "exit code")
        seconds = time.monotonic() - start
        check(seconds < 5, f"took {seconds:.1f} s although every client was flushed (grace 20 s)")
        check("shutdown complete (every client closed); 0 client(s) cut off" in server.log_text(),
              "shutdown summary missing")


@contextlib.contextmanager
def server_with_a_stuck_client(name, grace_ms):
    """A server with shutdown.grace_ms, a source at 20,000 updates/s, and a client
    whose queue has been filling for a second."""
    with Stack(name) as stack:
        stack.distributor()
        server = stack.server(1, extra=SMALL_SEND_BUFFER + f"shutdown:\n  grace_ms: {grace_ms}")
        source = stack.source("--items", "50", "--rate", "20000", "--duration", "20")
        wait_for_log(source, "items registered")
        stuck = stuck_subscriber(stack.client_ports[1])
        time.sleep(1.0)  # its queue fills while it reads nothing
        yield server
        stuck.close()


def test_a_client_that_does_not_read_is_cut_off_after_the_grace_period():
    with server_with_a_stuck_client("grace", 1500) as server:
        start = time.monotonic()
        server.popen.send_signal(signal.SIGTERM)
        check(server.wait(10) == 0, "exit code")
        seconds = time.monotonic() - start
        check(1.4 <= seconds < 5, f"exited after {seconds:.2f} s; the grace period is 1.5 s")
        check(re.search(r"shutdown complete \(grace period over\); 1 client\(s\) cut off", server.log_text()),
              "the cut-off client is not reported")


def test_second_sigterm_exits_at_once():
    with server_with_a_stuck_client("sigterm2", 60000) as server:
        server.popen.send_signal(signal.SIGTERM)
        wait_for_log(server, "up to 60000 ms to flush")
        start = time.monotonic()
        server.popen.send_signal(signal.SIGTERM)
        check(server.wait(10) == 0, "exit code")
        check(time.monotonic() - start < 3, "the second SIGTERM did not stop the server at once")
        check("shutdown complete (second SIGTERM)" in server.log_text(), "reason not logged")


def test_log_file_rotates():
    with Stack("logfile") as stack:
        pattern = os.path.join(stack.dir, "logs", "{name}.log")
        server = stack.server(1, extra=f"log:\n  file: {pattern}\n  level: trace\n"
                                       f"  max_file_bytes: 4096\n  max_files: 2")
        for _ in range(30):  # every connection logs a few lines at debug level
            c = connect(stack.client_ports[1])
            c.sendall(login_frame())
            c.close()
        deadline = time.monotonic() + 10
        files = []
        while time.monotonic() < deadline and len(files) < 3:
            files = sorted(glob.glob(os.path.join(stack.dir, "logs", "mdcast-server.1*.log")))
            time.sleep(0.1)
        names = [os.path.basename(f) for f in files]
        check(names == ["mdcast-server.1.1.log", "mdcast-server.1.2.log", "mdcast-server.1.log"],
              f"rotated files: {names}")
        check(all(os.path.getsize(f) <= 4096 + 512 for f in files), "a file passed max_file_bytes")
        # Rotation may leave the login lines in any of the files: what counts is that they are kept.
        check(any("logged in" in open(f).read() for f in files), "client lines not in the files")
        check(server.log_text().strip() == "", "lines still went to stderr")


if __name__ == "__main__":
    run([test_sighup_applies_reloadable_keys_and_names_the_rest,
         test_a_reloaded_publisher_frame_limit_applies_to_new_logins,
         test_sigterm_tells_clients_and_exits_when_they_are_flushed,
         test_a_client_that_does_not_read_is_cut_off_after_the_grace_period,
         test_second_sigterm_exits_at_once, test_log_file_rotates])
