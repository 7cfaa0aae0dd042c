"""mdcast-source --interactive (sink-driven) against the real stack: it answers
only the items subscribers ask for, with the sample values and the item file's
templates, a closed NOT_FOUND for a name it does not have, and spreads its rate
over the requested items only. Closing an item is tested here frame by frame
against a scripted distributor speaking the publisher protocol; the real
distributor's Unsubscribe is tested in test_interactive_interest.py."""
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import wire  # noqa: E402
from harness import BIN, ETC, Stack, check, frame, pb_string, run, split_frames, varint, wait_for_log  # noqa: E402

LOGIN_REQUEST, LOGIN_RESPONSE, PING, PONG = 1, 2, 3, 4
ANNOUNCE, ANNOUNCE_RESPONSE, REFRESH, UPDATE, UNSUBSCRIBE, IMAGE_REQUEST = 10, 11, 20, 21, 32, 41


def source_summary(source):
    for line in source.log_text().splitlines():
        if line.startswith('{"type":"source_summary"'):
            return json.loads(line)
    raise AssertionError(f"no source summary in:\n{source.log_text()[-3000:]}")


def bid_ok(value, index, seq):
    """BID of sample item `index` at `seq` (tools/sample_items.h)."""
    return round(float(value) * 100) == 10000 + 100 * index + seq % 1000


def test_answers_only_requested_items_and_spreads_the_rate():
    rate, seconds = 400, 4
    with Stack("interactive-source") as stack:
        # No hold: the items are closed at the source soon after the client leaves.
        stack.distributor(extra="interactive:\n  release_hold_ms: 0\n")
        stack.server(1)
        source = stack.source("--interactive", "--items", "100", "--rate", str(rate), "--duration",
                              str(seconds + 4), "--service", "ONDEMAND")
        wait_for_log(source, "announced as interactive")
        client = stack.client(1, "--service", "ONDEMAND", "--items", "ITEM000003,ITEM000042,NOPE",
                              "--duration", str(seconds))
        check(client.wait(timeout=seconds + 15) == 0, f"client failed:\n{client.log_text()[-2000:]}")
        check(source.wait(timeout=20) == 0, f"source failed:\n{source.log_text()[-2000:]}")
        messages = client.json_lines()
        refreshes = {m["item"]: m for m in messages if m["type"] == "refresh"}
        check(sorted(refreshes) == ["ITEM000003", "ITEM000042"], f"images for {sorted(refreshes)}")
        for name, index in (("ITEM000003", 3), ("ITEM000042", 42)):
            image = refreshes[name]
            check(image["fields"]["DSPLY_NAME"] == name and bid_ok(image["fields"]["BID"], index, image["seq"]),
                  f"{name} image: {image}")
        updates = [m for m in messages if m["type"] == "update"]
        check({m["item"] for m in updates} == {"ITEM000003", "ITEM000042"},
              f"updates for {sorted({m['item'] for m in updates})}")
        for m in updates:
            index = int(m["item"][4:])
            check(bid_ok(m["fields"]["BID"], index, m["seq"]), f"update values: {m}")
        missing = [m for m in messages if m["type"] == "status" and m["item"] == "NOPE"]
        check(missing and missing[0]["code"] == "NOT_FOUND" and missing[0]["stream"] == "closed", f"{missing}")
        summary = [m for m in messages if m["type"] == "summary"][-1]
        check(summary["gaps"] == 0 and summary["duplicates"] == 0, f"client {summary}")
        # The whole rate goes to the two requested items, half each.
        per_item = {name: sum(1 for m in updates if m["item"] == name) for name in refreshes}
        for name, count in per_item.items():
            check(abs(count - rate / 2 * seconds) <= 0.25 * rate / 2 * seconds, f"{name}: {count} updates")
        sent = source_summary(source)
        # The client left 4 s before the source stopped: the distributor closed both items.
        check(sent["mode"] == "interactive" and sent["requests"] == 2 and sent["closes"] == 2
              and sent["open_items"] == 0, f"{sent}")
        check(sent["sent"] >= len(updates), f"source sent {sent['sent']}, client got {len(updates)}")


def test_item_file_templates_in_the_images():
    with Stack("interactive-file") as stack:
        stack.distributor()
        stack.server(1)
        source = stack.source("--interactive", "--item-file", os.path.join(ETC, "samples/items.yaml"),
                              "--rate", "50", "--duration", "8")
        wait_for_log(source, "announced as interactive")
        items = [line.split("name:")[1].strip() for line in open(os.path.join(ETC, "samples/items.yaml"))
                 if line.startswith("  - name:")]
        client = stack.client(1, "--items", items[0], "--snapshot", "--duration", "5")
        check(client.wait(timeout=15) == 0, f"client failed:\n{client.log_text()[-2000:]}")
        images = [m for m in client.json_lines() if m["type"] == "refresh"]
        check(len(images) == 1 and images[0]["item"] == items[0], f"{images}")
        check(images[0]["fields"].get("HST_CLOSE") == 131.25 and images[0]["fields"]["DSPLY_NAME"] == "IBM.N",
              f"the item file's fields are not in {images[0]}")
        source.stop()


class ScriptedDistributor:
    """The distributor's side of one publisher connection, frame by frame."""

    def __init__(self, sock):
        self.sock = sock
        self.sock.settimeout(0.05)
        self.pending = b""

    def read(self, seconds):
        """Frames received within `seconds` (pings answered)."""
        frames, deadline = [], time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                break
            got, self.pending = split_frames(self.pending + chunk)
            for kind, body in got:
                if kind == PING:
                    self.sock.sendall(frame(PONG, body))
                frames.append((kind, body))
        return frames

    def expect(self, kind, seconds=5):
        for k, body in self.read_until(kind, seconds):
            if k == kind:
                return body
        raise AssertionError(f"no frame of type {kind}")

    def read_until(self, kind, seconds):
        frames, deadline = [], time.monotonic() + seconds
        while time.monotonic() < deadline and not any(k == kind for k, _ in frames):
            frames += self.read(0.05)
        return frames


def item_ids(frames, kind):
    return [wire.first(wire.fields(body), 1) for k, body in frames if k == kind]


def test_a_closed_item_gets_no_more_updates():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(10)
    with Stack("interactive-close") as stack:
        source = stack.start("source", [BIN["source"], "--interactive", "--distributor",
                                        f"127.0.0.1:{listener.getsockname()[1]}", "--items", "10",
                                        "--rate", "200", "--duration", "20"])
        sock, _ = listener.accept()
        peer = ScriptedDistributor(sock)
        peer.expect(LOGIN_REQUEST)
        sock.sendall(frame(LOGIN_RESPONSE, varint(1 << 3) + varint(1) + pb_string(3, "scripted")))
        announce = wire.fields(peer.expect(ANNOUNCE))
        check(wire.first(announce, 2) == 2, f"service not announced as interactive: {announce}")  # SERVICE_INTERACTIVE
        sock.sendall(frame(ANNOUNCE_RESPONSE, pb_string(1, "MDCAST") + varint(2 << 3) + varint(77)))
        wait_for_log(source, "announced as interactive")
        quiet = peer.read(0.5)
        check(not item_ids(quiet, REFRESH) and not item_ids(quiet, UPDATE), "published before any request")
        for name, item_id in (("ITEM000002", 1001), ("ITEM000005", 1002)):
            sock.sendall(frame(IMAGE_REQUEST, varint(1 << 3) + varint(77) + pb_string(2, "MDCAST") +
                               pb_string(3, name) + varint(4 << 3) + varint(item_id)))
        frames = peer.read(2)
        check(sorted(item_ids(frames, REFRESH)) == [1001, 1002], f"images: {item_ids(frames, REFRESH)}")
        updates = item_ids(frames, UPDATE)
        check(set(updates) == {1001, 1002}, f"updates for {set(updates)}")
        check(abs(updates.count(1001) - updates.count(1002)) <= 0.2 * len(updates), "rate not spread evenly")

        sock.sendall(frame(UNSUBSCRIBE, varint(1 << 3) + varint(1001)))
        peer.read(0.3)  # what was on its way
        after = item_ids(peer.read(2), UPDATE)
        check(1001 not in after, f"{after.count(1001)} updates for the closed item")
        check(len(after) > 200, f"the open item got only {len(after)} updates in 2 s (the whole rate is its)")

        source.stop()
        summary = [json.loads(line) for line in source.log_text().splitlines()
                   if line.startswith('{"type":"source_summary"')]
        check(summary and summary[0]["closes"] == 1 and summary[0]["open_items"] == 1
              and summary[0]["requests"] == 2, f"{summary}")
        sock.close()
    listener.close()


if __name__ == "__main__":
    run([test_answers_only_requested_items_and_spreads_the_rate, test_item_file_templates_in_the_images,
         test_a_closed_item_gets_no_more_updates])
