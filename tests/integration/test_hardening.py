"""Hardening (docs/hardening.md): one misbehaving peer, packet or value is
refused, closed or limited with a reason counted in /metrics, and the
well-behaved clients of the same server lose nothing."""
import json
import os
import select
import signal
import socket
import struct
import threading
import time

from harness import (CLOSE, LOGIN_REQUEST, LOGIN_RESPONSE, SUBSCRIBE, Stack, check, frame,
                     login_frame, pb_string, read_frames_until_close, run, split_frames, varint,
                     wait_for_events, wait_for_log, wait_for_port)
from test_hostile_client import CLOSE_NOT_LOGGED_IN, close_reason
from test_tls import admin_port, metric
from wire import ITEM_STATUS, REFRESH, UPDATE, fields, first

SERVICE_ANNOUNCE, SERVICE_ANNOUNCE_RESPONSE, ITEM_REGISTER, ITEM_REGISTERED = 10, 11, 12, 13
STATUS_INVALID_REQUEST = 8


def trickle_until_closed(port, seconds):
    """Connects and sends one byte of a never-finished login every 0.1 s. Returns
    (seconds until the peer closed, the frames it sent), or (None, []) when it
    was still open after `seconds`."""
    body = b"\x0a" + bytes([120]) + b"u" * 120  # a login whose user name never ends
    trickle = frame(LOGIN_REQUEST, body)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        started = time.monotonic()
        for byte in trickle:
            if time.monotonic() - started > seconds:
                return None, []
            try:
                s.sendall(bytes([byte]))
            except OSError:
                break
            if select.select([s], [], [], 0.1)[0]:
                break  # a Close frame, or the end of the stream
        return time.monotonic() - started, read_frames_until_close(s, timeout=2)


def good_client_summary(client):
    lines = [json.loads(line) for line in open(client.stdout_path) if line.strip()]
    check(lines and lines[-1]["type"] == "summary", f"no summary from {client.name}")
    return lines[-1]


def test_trickled_bytes_do_not_extend_the_login_timeout():
    """Item 1: the login deadline counts from accept; a peer sending one byte at a
    time is closed as not_logged_in (counted), on the server and the distributor."""
    with Stack("trickle") as stack:
        distributor = stack.distributor(extra_publishers="  login_timeout_ms: 800")
        server = stack.server(1, extra_clients="  login_timeout_ms: 800")
        source = stack.source("--items", "5", "--rate", "500", "--duration", "5")
        wait_for_log(source, "items registered")
        good = stack.client(1, "--items", "ITEM000000,ITEM000003", "--duration", "4", name="good")
        wait_for_log(server, "logged in")
        for name, process, port in (("server", server, stack.client_ports[1]),
                                    ("distributor", distributor, stack.publisher_port)):
            elapsed, frames = trickle_until_closed(port, seconds=6)
            check(elapsed is not None, f"{name}: a trickling peer was still open after 6 s")
            check(elapsed < 3, f"{name}: a trickling peer was closed only after {elapsed:.1f} s")
            check(close_reason(frames) == CLOSE_NOT_LOGGED_IN,
                  f"{name}: trickling peer closed with {close_reason(frames)}, not not_logged_in")
            prefix = "mdcast_server" if name == "server" else "mdcast_distributor"
            admin = admin_port(process)
            check(metric(admin, f'{prefix}_closes_total{{reason="not_logged_in"}}') >= 1,
                  f"{name}: not_logged_in close not counted")
            check(metric(admin, f'{prefix}_closes_total{{reason="auth_failed"}}') == 0,
                  f"{name}: a login timeout counted as auth_failed")
        check(source.wait(15) == 0, "source failed")
        check(good.wait(15) == 0, "good client exit code")
        summary = good_client_summary(good)
        check(summary["gaps"] == 0 and summary["duplicates"] == 0 and summary["updates"] >= 500,
              f"good client disturbed: {summary}")


def hammer_unknown_items(port, seconds, tag, batch=50):
    """Logs in and asks for never-seen item names of service MDCAST as fast as the
    server takes them, for `seconds`. Returns the ItemStatus frames it got back."""
    statuses, pending, n = 0, b"", 0
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(login_frame())
        s.settimeout(0.01)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            names = b"".join(pb_string(3, f"NOPE-{tag}-{n + i}") for i in range(batch))
            n += batch
            s.sendall(frame(SUBSCRIBE, pb_string(2, "MDCAST") + names))
            try:
                pending += s.recv(1 << 20)
            except socket.timeout:
                pass
            frames, pending = split_frames(pending)
            statuses += sum(1 for kind, _ in frames if kind == ITEM_STATUS)
    return statuses


def test_unknown_items_cost_only_the_asker():
    """Item 2: NOT_FOUND answers go by unicast to the asking server only; a client
    hammering unknown names gets its statuses, the other server hears nothing of
    it, and well-behaved clients on the same server lose nothing."""
    with Stack("unknown") as stack:
        distributor = stack.distributor()
        server = stack.server(1)
        other = stack.server(2)
        source = stack.source("--items", "20", "--rate", "2000", "--duration", "8")
        wait_for_log(source, "items registered")
        good = stack.client(1, "--item-count", "20", "--duration", "7", "--output", "none",
                            name="good")
        bystander = stack.client(2, "--item-count", "20", "--duration", "7", "--output", "none",
                                 name="bystander")
        wait_for_log(server, "logged in")
        wait_for_log(other, "logged in")
        time.sleep(1)
        other_admin = admin_port(other)
        other_statuses = metric(other_admin, "mdcast_server_statuses_in_total")
        results = []
        threads = [threading.Thread(target=lambda t=t: results.append(
            hammer_unknown_items(stack.client_ports[1], 4, t))) for t in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        check(sum(results) > 0, "the hammering clients got no NOT_FOUND status back")
        print(f"hammering clients: {sum(results)} NOT_FOUND statuses in 4 s", flush=True)
        heard = metric(other_admin, "mdcast_server_statuses_in_total") - other_statuses
        check(heard == 0, f"the other server heard {heard:.0f} statuses for names it never asked for")
        check(source.wait(20) == 0, "source failed")
        for client in (good, bystander):
            check(client.wait(20) == 0, f"{client.name} exit code")
            summary = json.loads(open(client.log_path).read().strip().splitlines()[-1])
            check(summary["gaps"] == 0 and summary["duplicates"] == 0 and summary["statuses"] == 0
                  and summary["updates"] > 5000, f"{client.name} disturbed: {summary}")
            print(f"{client.name}: {summary['updates']} updates, {summary['gaps']} gaps, "
                  f"{summary['statuses']} statuses", flush=True)
        check(metric(admin_port(server), "mdcast_server_unrecoverable_total") == 0,
              "backbone loss while unknown names were asked for")
        check(metric(admin_port(distributor), "mdcast_distributor_not_found_replies_total") > 0,
              "NOT_FOUND answers not counted by the distributor")
        check(metric(admin_port(server), "mdcast_server_not_found_in_total") > 0,
              "NOT_FOUND answers not counted by the asking server")


def pb_bytes(field, data):
    return varint(field << 3 | 2) + varint(len(data)) + data


def pb_varint(field, value):
    return varint(field << 3) + varint(value)


def read_frame_of(sock, kind, timeout=5):
    """Reads frames until one of `kind` (returns its body); fails on a Close."""
    data, deadline = b"", time.monotonic() + timeout
    sock.settimeout(timeout)
    while time.monotonic() < deadline:
        frames, _ = split_frames(data)
        for k, body in frames:
            if k == kind:
                return body
            check(k != CLOSE, f"closed while waiting for frame {kind}: {body}")
        chunk = sock.recv(65536)
        check(chunk, f"connection ended while waiting for frame {kind}")
        data += chunk
    raise AssertionError(f"no frame {kind} within {timeout} s")


def raw_publisher(port, service, item):
    """Logs in to the distributor, announces `service`, registers `item`;
    returns (socket, item id)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(login_frame("raw-publisher"))
    read_frame_of(s, LOGIN_RESPONSE)
    s.sendall(frame(SERVICE_ANNOUNCE, pb_string(1, service) + pb_varint(2, 1)))
    service_id = first(fields(read_frame_of(s, SERVICE_ANNOUNCE_RESPONSE)), 2)
    s.sendall(frame(ITEM_REGISTER,
                    pb_varint(1, service_id) + pb_bytes(2, pb_varint(1, 1) + pb_string(2, item))))
    entry = fields(first(fields(read_frame_of(s, ITEM_REGISTERED)), 2, b""))
    return s, first(entry, 2)


def field_list(value):
    """A FieldList with field 22 (BID) set to the string bytes `value`."""
    return pb_bytes(1, pb_varint(1, 22) + pb_bytes(5, value))


def test_invalid_utf8_is_refused_alone():
    """Item 3: a refresh or update whose string is not UTF-8 is refused with an
    INVALID_REQUEST status for that item; the publisher stays connected and its
    next valid messages flow; the refusal is counted."""
    with Stack("utf8") as stack:
        distributor = stack.distributor()
        server = stack.server(1)
        s, item_id = raw_publisher(stack.publisher_port, "RAW", "BADVALUE")
        check(item_id != 0, "item not registered")
        bad = b"\xff\xfe not utf-8"
        for kind, body in ((REFRESH, pb_varint(1, item_id) + pb_varint(2, 1) +
                            pb_bytes(9, field_list(bad))),
                           (UPDATE, pb_varint(1, item_id) + pb_varint(2, 1) +
                            pb_bytes(4, field_list(bad)))):
            s.sendall(frame(kind, body))
            status = fields(read_frame_of(s, ITEM_STATUS))
            check(first(status, 1) == item_id and
                  first(fields(first(status, 5, b"")), 3) == STATUS_INVALID_REQUEST,
                  f"frame {kind} with a bad string not refused with INVALID_REQUEST: {status}")
        # Still connected: a valid refresh is taken and reaches a subscriber.
        s.sendall(frame(REFRESH, pb_varint(1, item_id) + pb_varint(2, 1) +
                        pb_bytes(9, field_list("ok".encode()))))
        client = stack.client(1, "--service", "RAW", "--items", "BADVALUE", "--duration", "3")
        check(client.wait(15) == 0, "client exit code")
        summary = json.loads(open(client.stdout_path).read().strip().splitlines()[-1])
        check(summary["refreshes"] == 1, f"the valid refresh after the refusals was lost: {summary}")
        admin = admin_port(distributor)
        check(metric(admin, "mdcast_distributor_invalid_content_total") == 2,
              "refused values not counted")
        check(metric(admin, 'mdcast_distributor_closes_total{reason="protocol_error"}') == 0,
              "the publisher was closed for a bad value")
        s.close()
        server.stop()


def join_group(group, port):
    """A socket that hears the test's backbone group on loopback."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((group, port))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                 struct.pack("4s4s", socket.inet_aton(group), socket.inet_aton("127.0.0.1")))
    s.settimeout(5)
    return s


def send_to_group(group, port, datagram):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP) as s:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 0)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
        s.sendto(datagram, (group, port))


def wait_metric_at_least(port, name, value, timeout=10):
    deadline = time.monotonic() + timeout
    while metric(port, name) < value:
        check(time.monotonic() < deadline, f"{name} stayed below {value} for {timeout} s")
        time.sleep(0.1)


def test_replayed_old_epoch_is_refused():
    """Item 4: epochs grow with the distributor's start time; after a restart a
    replayed, validly signed packet of the old epoch is dropped (counted) and
    does not reset the server again."""
    with Stack("replay") as stack:
        key = stack.write("backbone.key", os.urandom(32).hex())
        listener = join_group(stack.group, stack.backbone_port)
        server = stack.server(1, extra=f"  key_file: {key}")
        admin = admin_port(server)
        distributor = stack.distributor(extra=f"  key_file: {key}")
        old = [listener.recv(65536)]  # the first epoch's first heartbeat, signed
        wait_for_log(server, "control address")  # the server follows the first epoch
        distributor.stop()
        stack.distributor(extra=f"  key_file: {key}")
        wait_metric_at_least(admin, "mdcast_server_epoch_changes_total", 1)
        source = stack.source("--items", "5", "--rate", "500", "--duration", "5")
        wait_for_log(source, "items registered")
        good = stack.client(1, "--items", "ITEM000000,ITEM000003", "--duration", "4", name="good")
        wait_for_log(server, "logged in")
        time.sleep(1)
        for _ in range(20):
            for datagram in old:
                send_to_group(stack.group, stack.backbone_port, datagram)
            time.sleep(0.05)
        check(metric(admin, "mdcast_server_epoch_changes_total") == 1,
              "a replayed old packet switched the server back to the old epoch")
        check(source.wait(15) == 0, "source failed")
        check(good.wait(15) == 0, "good client exit code")
        summary = good_client_summary(good)
        check(summary["gaps"] == 0 and summary["duplicates"] == 0 and summary["statuses"] == 0
              and summary["refreshes"] == 2, f"good client disturbed by the replay: {summary}")
        check(metric(admin, "mdcast_server_stale_epochs_total") >= 20, "replays not counted")
        listener.close()


def capture_data_packet(listener):
    """The next data packet (type 1) heard on the group."""
    while True:
        datagram = listener.recv(65536)
        if datagram[5] == 1:
            return datagram


def test_forged_far_sequence_does_not_stall():
    """Item 5: signing off, one forged packet numbered 10^9 ahead is not believed
    (dropped, counted): nothing is given up, no data stops."""
    with Stack("jump") as stack:
        listener = join_group(stack.group, stack.backbone_port)
        stack.distributor()
        server = stack.server(1)
        admin = admin_port(server)
        source = stack.source("--items", "5", "--rate", "500", "--duration", "5")
        wait_for_log(source, "items registered")
        good = stack.client(1, "--items", "ITEM000000,ITEM000003", "--duration", "4", name="good")
        wait_for_log(server, "logged in")
        time.sleep(1)
        real = capture_data_packet(listener)
        sequence = struct.unpack_from(">Q", real, 16)[0]
        forged = real[:16] + struct.pack(">Q", sequence + 1_000_000_000) + real[24:]
        send_to_group(stack.group, stack.backbone_port, forged)
        check(source.wait(15) == 0, "source failed")
        check(good.wait(15) == 0, "good client exit code")
        check(metric(admin, "mdcast_server_unrecoverable_total") == 0,
              "a forged sequence made the server give packets up")
        summary = good_client_summary(good)
        check(summary["gaps"] == 0 and summary["statuses"] == 0 and summary["updates"] >= 700,
              f"good client disturbed by the forged packet: {summary}")
        check(metric(admin, "mdcast_server_jumps_refused_total") >= 1, "the forged jump not counted")
        listener.close()


def test_subscription_before_any_source_is_answered():
    """Item 6: with no distributor heard yet, a subscription is answered at once
    with open/suspect SOURCE_DOWN (counted), and gets its image once the
    distributor and the publisher are up."""
    with Stack("nosource") as stack:
        server = stack.server(1)
        admin = admin_port(server)
        wait_for_port(stack.client_ports[1], server)
        client = stack.client(1, "--items", "ITEM000001", "--duration", "8", name="early")
        deadline = time.monotonic() + 5
        while metric(admin, "mdcast_server_waiting_for_source_total") < 1:
            check(time.monotonic() < deadline, "no answer to a subscription before any source")
            time.sleep(0.1)
        stack.distributor()
        source = stack.source("--items", "5", "--rate", "100", "--duration", "10")
        check(client.wait(20) == 0, "client exit code")
        lines = [m for m in client.json_lines() if m["type"] != "summary"]
        first_answer = lines[0] if lines else {}
        check(first_answer.get("type") == "status" and first_answer.get("stream") == "open" and
              first_answer.get("data") == "suspect" and first_answer.get("code") == "SOURCE_DOWN",
              f"the first answer was not open/suspect SOURCE_DOWN: {lines[:2]}")
        check(any(m["type"] == "refresh" for m in lines[1:]),
              f"no image once the source was up: {lines[:3]}")
        source.stop()


def test_paused_server_blames_no_source():
    """Item 7: a server stopped (SIGSTOP) for longer than backbone.source_silent_ms and
    resumed finds the distributor's packets waiting in its socket: it counts a stall and
    marks nothing suspect, so its clients see no status and no gap."""
    with Stack("paused") as stack:
        stack.distributor()
        server = stack.server(1, extra="  source_silent_ms: 800\n")
        admin = admin_port(server)
        source = stack.source("--items", "5", "--rate", "200", "--duration", "15")
        wait_for_log(server, "service MDCAST")  # before it, a subscription is closed "no such service"
        client = stack.client(1, "--items", "ITEM000000,ITEM000001", "--duration", "7", name="watcher")
        wait_for_events(client, lambda lines: sum(m["type"] == "refresh" for m in lines) >= 2,
                        what="both images")
        server.popen.send_signal(signal.SIGSTOP)
        try:
            time.sleep(2.5)  # three times source_silent_ms
        finally:
            server.popen.send_signal(signal.SIGCONT)
        check(client.wait(20) == 0, "client exit code")
        lines = [m for m in client.json_lines() if m["type"] not in ("summary",)]
        statuses = [m for m in lines if m["type"] == "status"]
        check(not statuses, f"a pause made the server send statuses: {statuses[:3]}")
        summary = [m for m in client.json_lines() if m["type"] == "summary"]
        check(summary and summary[0].get("gaps") == 0, f"gaps after the pause: {summary}")
        check(sum(m["type"] == "update" for m in lines) > 100, "no updates around the pause")
        check(metric(admin, "mdcast_server_stalls_total") >= 1, "the stall was not counted")
        check(metric(admin, "mdcast_server_source_silences_total") == 0,
              "the paused server blamed the distributor")
        source.stop()


if __name__ == "__main__":
    run([test_trickled_bytes_do_not_extend_the_login_timeout, test_unknown_items_cost_only_the_asker,
         test_invalid_utf8_is_refused_alone, test_replayed_old_epoch_is_refused,
         test_forged_far_sequence_does_not_stall, test_subscription_before_any_source_is_answered,
         test_paused_server_blames_no_source])
