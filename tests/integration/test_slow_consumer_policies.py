"""Slow consumers under the conflate policy: a client that stops reading is not
disconnected; once it reads again it gets, per item, one conflated update with
the current values, then the live stream; a fast client on the same server
meanwhile receives every update; a client still conflating when the source goes
down ends level with the cache, its values marked suspect. (The disconnect
policy is covered in test_hostile_client.py.)"""
import json
import re
import socket
import time

from harness import SUBSCRIBE, Stack, check, frame, login_frame, run, wait_for_log
from streams import sent_updates
from wire import CLOSE, ITEM_STATUS, REFRESH, UPDATE, fields, first, read_until_quiet

ITEMS = 50
DATA_SUSPECT, SOURCE_DOWN = 2, 3
CONFLATE = "output:\n  slow_consumer_policy: conflate\n  max_bytes: 65536\n" \
           "  guaranteed_bytes: 16384\n  tcp_send_buffer_bytes: 8192"


def subscribe_all():
    body = b"\x12\x06MDCAST" + b"".join(b"\x1a\x0a" + f"ITEM{i:06d}".encode() for i in range(ITEMS))
    return frame(SUBSCRIBE, body)


def slow_subscriber(stack):
    """A raw client of server 1 subscribed to every item, with a small receive buffer."""
    slow = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.connect(("127.0.0.1", stack.client_ports[1]))
    slow.sendall(login_frame() + subscribe_all())
    return slow


def test_conflate_policy_catches_a_slow_client_up():
    with Stack("conflate") as stack:
        stack.distributor()
        server = stack.server(1, extra=CONFLATE)
        # 5,000/s: a reading client keeps up even on a loaded box; one that stops
        # reading for 1.5 s still passes output.max_bytes many times over.
        source = stack.source("--items", str(ITEMS), "--rate", "5000", "--duration", "4")
        wait_for_log(source, "items registered")
        fast = stack.client(1, "--item-count", str(ITEMS), "--output", "none", "--duration", "5.5", name="fast")
        slow = slow_subscriber(stack)
        time.sleep(1.5)  # not reading: the server's queue for us fills up
        wait_for_log(server, "conflating")
        # Done once the source has finished and two seconds have been quiet (a loaded
        # machine can hold the server's last conflated writes back for a second).
        frames = read_until_quiet(slow, 2.0, 20, ready=lambda: source.popen.poll() is not None)
        check(source.wait(15) == 0, "source failed")
        total = sent_updates(source)
        check(all(kind != CLOSE for kind, _ in frames), "the slow client was disconnected")
        last, conflated = {}, 0
        for kind, body in frames:
            f = fields(body)
            item, seq = first(f, 1), first(f, 2)
            if kind == REFRESH:
                last[item] = seq
            elif kind == UPDATE:
                check(item in last, f"update for {item} before its image")
                is_conflated = first(f, 5) == 1
                conflated += is_conflated
                check(seq > last[item], f"item {item}: seq {seq} after {last[item]}")
                check(seq == last[item] + 1 or is_conflated, f"item {item}: jump {last[item]} -> {seq} not conflated")
                last[item] = seq
        check(conflated > 0, "no conflated update arrived")
        expected = {i: total // ITEMS + (1 if i < total % ITEMS else 0) for i in range(ITEMS)}
        check(sorted(last.values()) == sorted(expected.values()), "the slow client did not catch up to the end")
        check(fast.wait(15) == 0, "fast client exit code")
        summary = json.loads(open(fast.log_path).read().strip().splitlines()[-1])
        check(summary["gaps"] == 0 and summary["duplicates"] == 0 and summary["updates"] > 0.8 * total,
              f"fast client disturbed: {summary}")
        server.stop()
        episodes = re.findall(r"\bconflation_episodes=(\d+)", server.log_text())
        check(episodes and int(episodes[-1]) >= 1, "conflation not counted")


def test_conflating_client_ends_level_when_its_source_goes_down():
    # The client stops reading while the source publishes, so the server conflates for it;
    # the source then ends (its service goes down) before the client reads again. What the
    # client is owed must bring every item to the last sequence sent, marked suspect: a
    # status alone would leave it behind the cache, with no image to follow until the
    # source returns.
    with Stack("conflate-down") as stack:
        stack.distributor()
        server = stack.server(1, extra=CONFLATE)
        source = stack.source("--items", str(ITEMS), "--rate", "5000", "--duration", "2")
        wait_for_log(source, "items registered")
        slow = slow_subscriber(stack)
        wait_for_log(server, "conflating")
        check(source.wait(15) == 0, "source failed")
        total = sent_updates(source)
        wait_for_log(server, "is down")
        time.sleep(0.5)  # the service-down statuses reach the conflating client's book
        frames = read_until_quiet(slow, 2.0, 20)
        check(all(kind != CLOSE for kind, _ in frames), "the slow client was disconnected")
        last, state = {}, {}
        for kind, body in frames:
            f = fields(body)
            item = first(f, 1)
            if kind in (REFRESH, UPDATE):
                last[item] = max(last.get(item, 0), first(f, 2))
            if kind in (REFRESH, ITEM_STATUS):
                status = fields(first(f, 8 if kind == REFRESH else 5, b""))
                state[item] = (first(status, 2), first(status, 3))
        expected = sorted(total // ITEMS + (1 if i < total % ITEMS else 0) for i in range(ITEMS))
        check(sorted(last.values()) == expected,
              f"the conflating client ended behind the cache: {sorted(last.values())[:5]}... "
              f"against {expected[:5]}...")
        check(len(state) == ITEMS and all(s == (DATA_SUSPECT, SOURCE_DOWN) for s in state.values()),
              f"not every item ended suspect with source down: {set(state.values())}")
        server.stop()


if __name__ == "__main__":
    run([test_conflate_policy_catches_a_slow_client_up,
         test_conflating_client_ends_level_when_its_source_goes_down])
