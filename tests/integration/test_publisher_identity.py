"""Publisher identity (docs/hardening.md): a service belongs to the connection
that announced it. Another connection takes it over only by proving it is the
same publisher (the takeover token its earlier connection was given, a
password login as the same user, or the operator's takeover secret for a
restarted process); the same user, application and position are self-asserted
and prove nothing."""
import socket
import time

from harness import (LOGIN_REQUEST, LOGIN_RESPONSE, Stack, check, frame, pb_string, read_frames_until_close, run,
                     wait_for_log)
from streams import check_full_stream, messages, sent_updates
from test_hardening import (SERVICE_ANNOUNCE, SERVICE_ANNOUNCE_RESPONSE, pb_bytes, pb_varint,
                            read_frame_of)
from test_hostile_client import close_reason
from test_tls import admin_port, metric
from wire import fields, first

ITEMS = 5
STATUS_NOT_ENTITLED = 2
CLOSE_KICKED = 9  # proto/wire/common.proto CloseReason


def login(port, user, application="integration-test", position=""):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(frame(LOGIN_REQUEST, pb_string(1, user) + pb_string(2, application) +
                    pb_string(3, position)))
    read_frame_of(s, LOGIN_RESPONSE)
    return s


def announce(port, service, user, token=b"", application="integration-test", position=""):
    """A raw publisher connection that announces `service`, with a takeover
    token if given; returns (socket, the answer's fields)."""
    s = login(port, user, application, position)
    body = pb_string(1, service) + pb_varint(2, 1) + (pb_bytes(3, token) if token else b"")
    s.sendall(frame(SERVICE_ANNOUNCE, body))
    return s, fields(read_frame_of(s, SERVICE_ANNOUNCE_RESPONSE))


def status_code(answer):
    return first(fields(first(answer, 3, b"")), 3)


def still_open(sock):
    sock.settimeout(0.2)
    try:
        return sock.recv(65536) != b""
    except socket.timeout:
        return True
    except ConnectionResetError:
        return False


def source_names():
    """mdcast-source's login: its default user is "mdcast"."""
    return {"application": "mdcast-source", "position": socket.gethostname()}


def test_a_stranger_with_the_sources_names_takes_nothing():
    """mdcast-source publishes; a stranger logs in again and again with its user,
    application and position and announces its service: refused every time
    (NOT_ENTITLED, counted), the source is never kicked, and a client sees every
    update in order."""
    with Stack("identity") as stack:
        distributor = stack.distributor()
        server = stack.server(1)
        source = stack.source("--items", str(ITEMS), "--rate", "500", "--duration", "6")
        wait_for_log(source, "items registered")
        wait_for_log(server, "service MDCAST (")
        names = [f"ITEM{i:06d}" for i in range(ITEMS)]
        client = stack.client(1, "--items", ",".join(names), "--duration", "7")
        attempts, deadline = 0, time.monotonic() + 3
        while time.monotonic() < deadline:
            s, answer = announce(stack.publisher_port, "MDCAST", "mdcast", **source_names())
            check(not first(answer, 2), f"the stranger took the service: {answer}")
            check(status_code(answer) == STATUS_NOT_ENTITLED, f"refusal code: {answer}")
            check(not first(answer, 4, b""), "a refused claimant was given a takeover token")
            s.close()
            attempts += 1
        check(source.wait(20) == 0, "the source did not finish (kicked?)")
        check("kicked" not in source.log_text(), "the source was kicked")
        check(client.wait(20) == 0, "client exit code")
        check_full_stream(messages(client), names, sent_updates(source), ITEMS)
        admin = admin_port(distributor)
        check(metric(admin, "mdcast_distributor_publisher_takeovers_refused_total") == attempts,
              f"{attempts} refusals not counted")
        check(metric(admin, "mdcast_distributor_publisher_takeovers_total") == 0, "a takeover counted")
        check(metric(admin, 'mdcast_distributor_closes_total{reason="kicked"}') == 0, "a publisher kicked")


def check_told_kicked(connection):
    """The replaced connection is told why (a Close frame, reason KICKED), then closed."""
    frames = read_frames_until_close(connection)
    check(close_reason(frames) == CLOSE_KICKED, f"no Close(KICKED) on the earlier connection: {frames}")
    connection.settimeout(1)
    try:
        check(connection.recv(1) == b"", "the earlier connection is still open")
    except ConnectionResetError:
        pass


def test_publisher_reconnect_takes_over_its_services():
    """A publisher's new connection can log in before the distributor has seen
    its earlier one close: with the takeover token of the earlier connection it
    takes the service over (the earlier connection is closed, counted as
    `kicked`); the same names without it, or another publisher with it, are
    refused."""
    with Stack("takeover") as stack:
        distributor = stack.distributor()
        first_connection, owned = announce(stack.publisher_port, "OWNED", "pub-a")
        token = first(owned, 4, b"")
        check(first(owned, 2) and len(token) == 16, f"first announce: {owned}")
        guess, answer = announce(stack.publisher_port, "OWNED", "pub-a")
        check(not first(answer, 2), f"the same names without the token took the service: {answer}")
        check(still_open(first_connection), "the owner was closed by a refused claim")
        other, answer = announce(stack.publisher_port, "OWNED", "pub-b", token)
        check(not first(answer, 2), f"another publisher took the service with the token: {answer}")
        second, answer = announce(stack.publisher_port, "OWNED", "pub-a", token)
        check(first(answer, 2) == first(owned, 2), f"the owner's reconnect was refused: {answer}")
        check_told_kicked(first_connection)
        admin = admin_port(distributor)
        check(metric(admin, 'mdcast_distributor_closes_total{reason="kicked"}') == 1,
              "the replaced connection not counted")
        check(metric(admin, "mdcast_distributor_publisher_takeovers_total") == 1, "takeover not counted")
        check(metric(admin, "mdcast_distributor_publisher_takeovers_refused_total") == 2,
              "refusals not counted")
        for s in (guess, other, second):
            s.close()


def test_a_restarted_source_takes_over_with_the_operators_secret():
    """A source restarts while its earlier connection (here a raw connection with
    its names that announced its service and went silent) is still registered.
    Without the operator's secret the new source is refused and exits; a
    stranger with a wrong secret is refused; with the secret
    (publishers.takeover_secret_file, mdcast-source --takeover-secret-file) the
    source takes the service over at once, the earlier connection is closed,
    and a client sees every update in order."""
    secret = "restart-secret-0123456789"
    with Stack("secret") as stack:
        secret_file = stack.write("takeover.secret", secret + "\n")
        distributor = stack.distributor(extra_publishers=f"  takeover_secret_file: {secret_file}")
        server = stack.server(1)
        earlier, owned = announce(stack.publisher_port, "MDCAST", "mdcast", **source_names())
        check(first(owned, 2), f"the earlier connection's announce: {owned}")
        refused = stack.source("--items", str(ITEMS), "--duration", "5", name="refused")
        check(refused.wait(20) == 1, "a source without the secret was not refused")
        check("service refused" in refused.log_text(), "no refusal in the source's log")
        guess, answer = announce(stack.publisher_port, "MDCAST", "mdcast",
                                 token=secret[:-1].encode() + b"x", **source_names())
        check(not first(answer, 2), f"a wrong secret took the service: {answer}")
        check(still_open(earlier), "a refused claim closed the earlier connection")
        source = stack.source("--items", str(ITEMS), "--rate", "500", "--duration", "5",
                              "--takeover-secret-file", secret_file)
        wait_for_log(source, "items registered")
        wait_for_log(server, "service MDCAST (")
        names = [f"ITEM{i:06d}" for i in range(ITEMS)]
        client = stack.client(1, "--items", ",".join(names), "--duration", "7")
        check_told_kicked(earlier)
        check(source.wait(20) == 0, "the source with the secret did not finish")
        check(client.wait(20) == 0, "client exit code")
        check_full_stream(messages(client), names, sent_updates(source), ITEMS)
        admin = admin_port(distributor)
        check(metric(admin, "mdcast_distributor_publisher_takeovers_total") == 1, "takeover not counted")
        check(metric(admin, "mdcast_distributor_publisher_takeovers_refused_total") == 2,
              "refusals not counted")
        wait_for_log(distributor, "proven by the operator's takeover secret")
        guess.close()


if __name__ == "__main__":
    run([test_a_stranger_with_the_sources_names_takes_nothing,
         test_publisher_reconnect_takes_over_its_services,
         test_a_restarted_source_takes_over_with_the_operators_secret])
