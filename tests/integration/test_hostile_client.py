"""Hostile and broken clients are disconnected with a logged reason, and the
other clients of the same server keep receiving every update."""
import json
import socket
import struct
import time

from harness import (CLOSE, FRAME, LOGIN_RESPONSE, SUBSCRIBE, Stack, check, frame, login_frame,
                     read_frames_until_close, run, stuck_subscriber, wait_for_log)


def connect(port):
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def close_reason(frames):
    """The wire CloseReason number of a Close frame (field 1, varint), or None."""
    for kind, body in frames:
        if kind == CLOSE and body[:1] == b"\x08":
            return body[1]
    return None


CLOSE_PROTOCOL_ERROR, CLOSE_FRAME_TOO_LARGE, CLOSE_AUTH_FAILED, CLOSE_NOT_LOGGED_IN = 1, 2, 3, 8


def test_bad_clients_are_closed_and_others_unaffected():
    with Stack("hostile") as stack:
        stack.distributor()
        server = stack.server(1, extra_clients="  max_frame_bytes: 4096\n  login_timeout_ms: 500")
        port = stack.client_ports[1]
        source = stack.source("--items", "5", "--rate", "500", "--duration", "4")
        wait_for_log(source, "items registered")
        good = stack.client(1, "--items", "ITEM000000,ITEM000003", "--duration", "5", name="good")
        wait_for_log(server, "logged in")

        # Random garbage reads as an absurd length.
        s = connect(port)
        s.sendall(b"\xff" * 64)
        check(close_reason(read_frames_until_close(s)) == CLOSE_FRAME_TOO_LARGE, "garbage not refused")

        # A well-sized frame of an undefined type.
        s = connect(port)
        s.sendall(struct.pack(">IHH", 4, 0xFFFF, 0) + b"junk")
        check(close_reason(read_frames_until_close(s)) == CLOSE_PROTOCOL_ERROR, "unknown frame type accepted")

        # A header announcing 100 MB: refused as soon as the header arrives.
        s = connect(port)
        s.sendall(login_frame() + FRAME.pack(100 << 20, SUBSCRIBE, 0))
        frames = read_frames_until_close(s)
        check(frames and frames[0][0] == LOGIN_RESPONSE, "login before the oversized frame not answered")
        check(close_reason(frames) == CLOSE_FRAME_TOO_LARGE, f"oversized frame not refused: {frames}")

        # A subscribe before logging in.
        s = connect(port)
        s.sendall(frame(SUBSCRIBE, b""))
        check(close_reason(read_frames_until_close(s)) == CLOSE_NOT_LOGGED_IN, "request before login accepted")

        # A login whose body is not protobuf.
        s = connect(port)
        s.sendall(frame(1, b"\x0a\xff\xff\xff\xff\x0f"))
        check(close_reason(read_frames_until_close(s)) == CLOSE_PROTOCOL_ERROR, "malformed login accepted")

        # Connects and never logs in: closed after clients.login_timeout_ms.
        s = connect(port)
        started = time.monotonic()
        check(close_reason(read_frames_until_close(s, timeout=5)) == CLOSE_NOT_LOGGED_IN, "silent client not closed")
        check(time.monotonic() - started < 3, "login timeout not applied")

        # A client that stops reading is a slow consumer once its queue is full; the
        # distributor and the good client do not notice (checked below).
        check(source.wait(15) == 0, "source failed")
        check(good.wait(15) == 0, "good client exit code")
        log = server.log_text()
        for reason in ("protocol_error", "frame_too_large", "not_logged_in"):
            check(reason in log, f"server log does not name '{reason}'")
        lines = [json.loads(l) for l in open(good.stdout_path) if l.strip()]
        summary = lines[-1]
        check(summary["type"] == "summary" and summary["gaps"] == 0 and summary["duplicates"] == 0,
              f"good client disturbed: {summary}")
        check(summary["updates"] >= 700, f"good client got only {summary['updates']} updates")


def test_slow_consumer_is_disconnected():
    with Stack("slow") as stack:
        stack.distributor()
        # Small kernel buffers make the stuck client's queue grow at once; 1 MiB of queue
        # leaves the reading client plenty of slack on a loaded machine.
        server = stack.server(1, extra="output:\n  max_bytes: 1048576\n  tcp_send_buffer_bytes: 4096")
        port = stack.client_ports[1]
        source = stack.source("--items", "50", "--rate", "20000", "--duration", "3")
        wait_for_log(source, "items registered")
        good = stack.client(1, "--item-count", "50", "--duration", "3.5", "--output", "none", name="good")
        s = stuck_subscriber(port)
        wait_for_log(server, "slow_consumer", timeout=10)
        s.close()
        check(source.wait(15) == 0, "source failed")
        check(good.wait(15) == 0, "good client exit code")
        summary = json.loads(open(good.log_path).read().strip().splitlines()[-1])
        check(summary["gaps"] == 0 and summary["duplicates"] == 0, f"good client disturbed: {summary}")


if __name__ == "__main__":
    run([test_bad_clients_are_closed_and_others_unaffected, test_slow_consumer_is_disconnected])
