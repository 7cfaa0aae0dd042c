"""Interest in interactive items, end to end with the real binaries: when the
last subscriber of an item leaves every server (unsubscribe, disconnect, or a
server killed without a word), the distributor tells mdcast-source --interactive
to stop it (Unsubscribe), after interactive.release_hold_ms; while another
server still holds it, it keeps flowing; subscribing again brings a fresh image
from the source, not the stale one (docs/sdk.md, "Interest in
interactive items")."""
import asyncio
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import wire  # noqa: E402
from harness import (Stack, check, frame, free_port, login_frame, metric, pb_string, run,  # noqa: E402
                     split_frames, varint, wait_for_log, wait_for_port)
from test_admin_http import admin_port  # noqa: E402
from ws_client import collect_until, connect, login, ws_section  # noqa: E402

SUBSCRIBE, UNSUBSCRIBE = 31, 32
SERVICE = "ONDEMAND"
# Short lease and hold so the test sees them end; servers renew every second.
INTERACTIVE = """
interactive:
  interest_lease_ms: 3000
  release_hold_ms: 500
"""


class Subscriber:
    """A raw client connection: subscribes, unsubscribes, and counts what arrives."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.sendall(login_frame())
        self.sock.settimeout(0.05)
        self.pending = b""
        self.item_ids = {}  # name -> id, from the first image or status
        self.refreshes, self.updates, self.statuses = [], [], []

    def subscribe(self, name, snapshot=False):
        body = pb_string(2, SERVICE) + pb_string(3, name)
        if snapshot:
            body += varint(4 << 3) + varint(1)
        self.sock.sendall(frame(SUBSCRIBE, body))

    def unsubscribe(self, name):
        self.sock.sendall(frame(UNSUBSCRIBE, varint(1 << 3) + varint(self.item_ids[name])))

    def read(self, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                continue
            got, self.pending = split_frames(self.pending + chunk)
            for kind, body in got:
                f = wire.fields(body)
                if kind == wire.REFRESH:
                    self.item_ids[wire.first(f, 7, b"").decode()] = wire.first(f, 1)
                    self.refreshes.append((time.monotonic(), wire.first(f, 1), wire.first(f, 2)))
                elif kind == wire.UPDATE:
                    self.updates.append((time.monotonic(), wire.first(f, 1), wire.first(f, 2)))
                elif kind == wire.ITEM_STATUS:
                    self.statuses.append((time.monotonic(), wire.first(f, 1)))

    def wait_for_image(self, name, timeout=10):
        deadline = time.monotonic() + timeout
        while name not in self.item_ids and time.monotonic() < deadline:
            self.read(0.1)
        check(name in self.item_ids, f"no image of {name}")
        return self.item_ids[name]

    def updates_since(self, since, item_id):
        return sum(1 for t, i, _ in self.updates if t >= since and i == item_id)

    def close(self):
        self.sock.close()


def wait_for_metric(port, name, predicate, timeout=12):
    deadline = time.monotonic() + timeout
    while True:
        value = metric(port, name)
        if predicate(value):
            return value
        check(time.monotonic() < deadline, f"{name} is still {value}")
        time.sleep(0.2)


def published_updates(dport, seconds=1.5):
    """Updates the distributor took from publishers over `seconds`."""
    before = metric(dport, "mdcast_distributor_updates_total")
    time.sleep(seconds)
    return metric(dport, "mdcast_distributor_updates_total") - before


def source_summary(source):
    for line in source.log_text().splitlines():
        if line.startswith('{"type":"source_summary"'):
            return json.loads(line)
    raise AssertionError(f"no source summary in:\n{source.log_text()[-3000:]}")


def interactive_stack(stack, servers):
    distributor = stack.distributor(extra=INTERACTIVE)
    started = [stack.server(n) for n in servers]
    source = stack.source("--interactive", "--items", "10", "--rate", "200", "--duration", "60",
                          "--service", SERVICE)
    wait_for_log(source, "announced as interactive")
    return distributor, started, source


def test_last_subscriber_leaving_stops_the_source_and_a_new_one_gets_a_fresh_image():
    with Stack("interest-release") as stack:
        distributor, (server1, server2), source = interactive_stack(stack, (1, 2))
        dport, sport1, sport2 = admin_port(distributor), admin_port(server1), admin_port(server2)
        a, b = Subscriber(stack.client_ports[1]), Subscriber(stack.client_ports[2])
        a.subscribe("ITEM000003")
        item = a.wait_for_image("ITEM000003")
        b.subscribe("ITEM000003")
        check(b.wait_for_image("ITEM000003") == item, "the two servers name the item differently")

        # A leaves; server 1 releases at once, but server 2 still holds the item.
        a.unsubscribe("ITEM000003")
        wait_for_metric(sport1, "mdcast_server_interest_released_total", lambda v: v == 1)
        wait_for_metric(dport, "mdcast_distributor_interest_released_total", lambda v: v == 1)
        time.sleep(2.5)  # past the hold and several renewals
        since = time.monotonic()
        b.read(1.5)
        check(b.updates_since(since, item) > 100, f"B got {b.updates_since(since, item)} updates in 1.5 s")
        check(metric(dport, "mdcast_distributor_unsubscribes_sent_total") == 0,
              "the source was told to stop an item server 2 still holds")

        # B leaves too: after the hold the source is told, and stops publishing.
        b.unsubscribe("ITEM000003")
        wait_for_metric(sport2, "mdcast_server_interest_released_total", lambda v: v == 1)
        wait_for_metric(dport, "mdcast_distributor_unsubscribes_sent_total", lambda v: v == 1)
        time.sleep(0.5)  # what was on its way
        check(published_updates(dport) == 0, "the source still publishes the item nobody wants")
        check(metric(dport, "mdcast_distributor_interest_leases_expired_total") == 0,
              "a lease expired although both servers released")
        wait_for_log(distributor, "no server wants any more, unsubscribed")

        # Subscribing again asks the source afresh: a new image, then updates.
        refreshes_before = metric(dport, "mdcast_distributor_refreshes_total")
        requests_before = metric(dport, "mdcast_distributor_image_requests_total")
        a.refreshes.clear()
        asked = time.monotonic()
        a.subscribe("ITEM000003")
        deadline = time.monotonic() + 10
        while not a.refreshes and time.monotonic() < deadline:
            a.read(0.1)
        check(a.refreshes, "no image after subscribing again")
        check(metric(dport, "mdcast_distributor_refreshes_total") == refreshes_before + 1,
              "the image did not come from the source")
        a.read(1)
        check(a.updates_since(asked, item) > 50, f"only {a.updates_since(asked, item)} updates after resubscribing")
        check(metric(dport, "mdcast_distributor_image_requests_total") > requests_before,
              "server 1 served its cached image instead of asking upstream")

        source.stop()
        summary = source_summary(source)
        check(summary["requests"] == 2 and summary["closes"] == 1 and summary["open_items"] == 1,
              f"source {summary}")
        a.close()
        b.close()


def test_a_killed_server_and_a_websocket_disconnect_release_their_interest():
    with Stack("interest-expiry") as stack:
        distributor = stack.distributor(extra=INTERACTIVE)
        server1 = stack.server(1)
        ws_port = free_port()
        server2 = stack.server(2, extra_clients=ws_section(ws_port))
        wait_for_port(ws_port, server2)
        source = stack.source("--interactive", "--items", "10", "--rate", "200", "--duration", "60",
                              "--service", SERVICE)
        wait_for_log(source, "announced as interactive")
        dport, sport2 = admin_port(distributor), admin_port(server2)

        # A WebSocket client takes ITEM000005 and goes away without closing the stream.
        async def websocket_client():
            ws = await connect(ws_port)
            await login(ws)
            await ws.send(json.dumps({"ID": 2, "Key": {"Service": SERVICE, "Name": "ITEM000005"}}))
            await collect_until(ws, lambda got: any(m.get("Type") == "Update" for m in got), 10)
            await ws.close()

        asyncio.run(websocket_client())
        wait_for_metric(sport2, "mdcast_server_interest_released_total", lambda v: v == 1)
        wait_for_metric(dport, "mdcast_distributor_unsubscribes_sent_total", lambda v: v == 1)

        # A native client on server 1 holds ITEM000007; server 1 is killed (no word).
        a = Subscriber(stack.client_ports[1])
        a.subscribe("ITEM000007")
        a.wait_for_image("ITEM000007")
        a.read(1)
        check(published_updates(dport, 1) > 100, "the source does not publish the held item")
        server1.popen.kill()
        server1.popen.wait(5)
        killed = time.monotonic()
        wait_for_metric(dport, "mdcast_distributor_interest_leases_expired_total", lambda v: v == 1)
        wait_for_metric(dport, "mdcast_distributor_unsubscribes_sent_total", lambda v: v == 2)
        waited = time.monotonic() - killed
        check(2.0 <= waited <= 8, f"unsubscribed {waited:.1f} s after the kill (lease 3 s, hold 0.5 s)")
        time.sleep(0.5)
        check(published_updates(dport) == 0, "the source still publishes after the server died")
        check(metric(dport, "mdcast_distributor_interest_leases") == 0, "leases left")
        source.stop()
        summary = source_summary(source)
        check(summary["requests"] == 2 and summary["closes"] == 2 and summary["open_items"] == 0,
              f"source {summary}")
        a.close()


def test_a_snapshot_releases_its_interest_once_answered():
    with Stack("interest-snapshot") as stack:
        distributor, (server1,), source = interactive_stack(stack, (1,))
        dport, sport1 = admin_port(distributor), admin_port(server1)
        a = Subscriber(stack.client_ports[1])
        asked = time.monotonic()
        a.subscribe("ITEM000004", snapshot=True)
        a.wait_for_image("ITEM000004")
        # Released as soon as answered, not one lease (3 s) plus the hold later.
        wait_for_metric(sport1, "mdcast_server_interest_released_total", lambda v: v == 1)
        wait_for_metric(dport, "mdcast_distributor_unsubscribes_sent_total", lambda v: v == 1)
        waited = time.monotonic() - asked
        check(waited < 2.5, f"the source was told to stop {waited:.1f} s after the snapshot")
        check(metric(dport, "mdcast_distributor_interest_leases_expired_total") == 0,
              "the snapshot's lease ran out instead of being released")
        time.sleep(0.5)  # what was on its way
        check(published_updates(dport) == 0, "the source still publishes the snapshot's item")
        a.read(0.5)
        check(not a.updates, f"{len(a.updates)} updates after a snapshot")
        source.stop()
        summary = source_summary(source)
        check(summary["requests"] == 1 and summary["closes"] == 1 and summary["open_items"] == 0,
              f"source {summary}")
        a.close()


if __name__ == "__main__":
    run([test_last_subscriber_leaving_stops_the_source_and_a_new_one_gets_a_fresh_image,
         test_a_killed_server_and_a_websocket_disconnect_release_their_interest,
         test_a_snapshot_releases_its_interest_once_answered])
