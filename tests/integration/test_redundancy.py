"""Redundant sources (docs/operations.md, "Redundancy"): two distributors (ids 1
and 2) on one backbone, each with its own mdcast-source publishing the same
service and items, form a redundancy group on the server. When the active one
goes (its publisher killed, the distributor killed or stopped) every subscribed
item moves to the hot standby, keeping its id and sequence: nothing is sent where
the standby's values are the same, one refresh where they differ; no suspect
status, no gap, no repeat. It moves back per rank once the preferred source has
stayed up for the hold-down. A standby that was silent
for a while is made hot again before it is needed.

Two well-behaved clients watch every item: mdcast-client (the raw protocol: every
field of every message checked against what the source publishes) and the SDK's
Consumer (its sequencer: nothing dropped as a duplicate, updates in sequence
after each refresh)."""
import json
import os
import re
import signal
import subprocess
import time
from decimal import Decimal

from harness import (Stack, admin_port, check, json_events, metric, run, sdk_consumer, wait_for_log,
                     wait_until)
from streams import by_item, check_switched_stream, expected_fields, messages
from test_admin_http import get
from test_several_backbones import add_distributor

ITEMS = 20
NAMES = [f"ITEM{i:06d}" for i in range(ITEMS)]
SILENT_MS = 2000  # a loaded test machine must not make a distributor look silent
HOLD_DOWN_MS = 1500


class Pair:
    """Distributors 1 and 2 with a source each (same service, same items), one
    server, an mdcast-client and an SDK consumer on every item."""

    def __init__(self, stack, standby_items=ITEMS, rate=400, extra_clients=""):
        self.stack, self.rate = stack, rate
        self.ports = {1: add_distributor(stack, "dist1", 1, stack.group, stack.backbone_port),
                      2: add_distributor(stack, "dist2", 2, stack.group, stack.backbone_port)}
        self.server = stack.server(1, extra_clients=extra_clients, extra=f"  source_silent_ms: {SILENT_MS}\n"
                                            f"redundancy:\n  hold_down_ms: {HOLD_DOWN_MS}\n"
                                            "  switch_slice_items: 3\n  switch_slice_us: 0\n")
        self.sources = {}
        # Distributor 1 (the lowest id, so the preferred one) up first, then the
        # standby: the group starts as it will be ranked, with no switch.
        for distributor_id, items in ((1, ITEMS), (2, standby_items)):
            wait_for_log(self.start_source(distributor_id, items=items), "items registered")
            wait_for_log(self.server, f"({distributor_id << 16 | 1}) is up")
        self.client = stack.client(1, "--service", "MDCAST", "--items", ",".join(NAMES),
                                   "--duration", "600")
        self.sdk = sdk_consumer(stack, [1], "--service", "MDCAST", "--items", ",".join(NAMES),
                                "--duration", "600")
        self.wait_served_by(1)

    def start_source(self, distributor_id, name=None, items=ITEMS):
        self.sources[distributor_id] = self.stack.start(
            name or f"source{distributor_id}",
            [os.environ.get("MDCAST_SOURCE", "mdcast-source"), "--distributor",
             f"127.0.0.1:{self.ports[distributor_id]}", "--items", str(items), "--rate", str(self.rate),
             "--duration", "0"])
        return self.sources[distributor_id]

    def distributor(self, distributor_id):
        return next(p for p in self.stack.processes if p.name == f"dist{distributor_id}")

    def items_json(self):
        """The server's /items (its cached items, both members')."""
        code, body = get(admin_port(self.server), "/items?limit=1000")
        check(code == 200, f"/items: {code} {body}")
        return body

    def served_by(self):
        """Per item name, the distributors serving its subscribed items (/items served_by)."""
        served = {}
        for item in json.loads(self.items_json())["items"]:
            if item["subscribers"]:
                served.setdefault(item["name"], set()).add(item["served_by"])
        return served

    def update_counts(self):
        counts = {}
        for m in messages_so_far(self.client):
            if m["type"] == "update":
                counts[m["item"]] = counts.get(m["item"], 0) + 1
        return counts

    def wait_served_by(self, distributor_id, names=NAMES, timeout=20):
        """Until every item's subscribers are served by `distributor_id`, and have had a few
        more updates since (the stream goes on from there)."""
        wait_until(lambda: (lambda s: all(s.get(n) == {distributor_id} for n in names))(self.served_by()),
                   timeout, f"every item served by distributor {distributor_id}")
        if getattr(self, "rate", None) == 0:  # images only (a Pair's sources): every item's refresh
            return wait_until(lambda: {m["item"] for m in messages_so_far(self.client) if m["type"] == "refresh"}
                              >= set(names), timeout, "every item's refresh")
        start = self.update_counts()
        wait_until(lambda: (lambda c: all(c.get(n, 0) >= start.get(n, 0) + 3 for n in names))(self.update_counts()),
                   timeout, f"3 more updates of every item from distributor {distributor_id}")

    def finish(self, switches, names=NAMES, statuses=0):
        """Stops the clients and checks both streams of `names`; `switches` is how
        many times the items changed distributor, `statuses` how many the SDK saw."""
        for p in (self.client, self.sdk):
            p.popen.send_signal(signal.SIGINT)
            p.wait(10)
        check_raw_stream(messages(self.client), switches, names)
        check_sdk_stream(json_events(self.sdk), switches, names, statuses)


def messages_so_far(client):
    """The complete JSON lines the client printed so far."""
    out = []
    with open(client.stdout_path) as f:
        for line in f.read().split("\n")[:-1]:
            if line.strip():
                out.append(json.loads(line, parse_float=Decimal))
    return out


def check_raw_stream(lines, switches, names=NAMES, expected=expected_fields,
                     seq_of=lambda f: int(f["ACVOL_1"]) // 10):
    """Every value and sequence of `names` (streams.check_switched_stream)."""
    check_switched_stream(lines, switches, names, expected, seq_of)


def check_sdk_stream(events, switches, names=NAMES, statuses=0):
    """The SDK's view: per item no status, at most 1 + `switches` refreshes (data
    ok), updates in sequence after each, nothing dropped as a duplicate."""
    per_item = {}
    for e in events:
        if e.get("event") in ("refresh", "update", "status"):
            per_item.setdefault(e["item"], []).append(e)
    for name in names:
        got = per_item.get(name, [])
        check(got and got[0]["event"] == "refresh", f"SDK {name}: first event {got[:1]}")
        check(all(e["event"] != "status" for e in got), f"SDK {name}: a status: {[e for e in got if e['event'] == 'status'][:2]}")
        refreshes = [e for e in got if e["event"] == "refresh"]
        check(len(refreshes) <= 1 + switches, f"SDK {name}: {len(refreshes)} refreshes")
        check(all(e["data"] == "ok" for e in refreshes), f"SDK {name}: refresh not ok")
        seq = None
        for e in got:
            if e["event"] == "update":
                check(e["seq"] == seq + 1, f"SDK {name}: update seq {e['seq']} after {seq}")
            seq = e["seq"]
    summary = [e for e in events if e.get("event") == "summary"][-1]
    check(summary["duplicates_dropped"] == 0 and summary["statuses"] == statuses, f"SDK summary {summary}")


def switch_lines(server):
    return re.findall(r"service MDCAST moved from distributor (\d+) to distributor (\d+) \((\w+)\)",
                      server.log_text())


def check_visible(server, active, standbys, reason, switches):
    """/metrics, /info and mdcastctl status show the group's active source, standbys and last switch."""
    port = admin_port(server)
    check(metric(port, 'mdcast_server_redundancy_active_source{service="MDCAST"}') == active, "active source metric")
    check(metric(port, 'mdcast_server_redundancy_standby_sources{service="MDCAST"}') == standbys, "standby metric")
    check(metric(port, f'mdcast_server_redundancy_switches_total{{reason="{reason}"}}') == 1, "switch reason metric")
    check(metric(port, "mdcast_server_redundancy_items_switched_total") == ITEMS * switches, "items switched metric")
    unchanged = metric(port, "mdcast_server_redundancy_items_unchanged_total")
    check(0 <= unchanged <= ITEMS * switches, f"items unchanged metric {unchanged}")
    ctl = subprocess.run([os.environ.get("MDCAST_CTL", "mdcastctl"), "--admin", f"127.0.0.1:{port}", "status"],
                         capture_output=True, text=True, timeout=30)
    check(f"service MDCAST: active distributor {active}, {standbys} standby, {switches} switches, last " in ctl.stdout
          and f"({reason})" in ctl.stdout, f"mdcastctl status: {ctl.stdout}{ctl.stderr}")
    code, body = get(port, "/info")
    check(code == 200, f"/info: {code}")
    groups = json.loads(body)["redundancy"]["groups"]
    check(len(groups) == 1 and groups[0]["service"] == "MDCAST" and groups[0]["active"] == active and
          groups[0]["switches"] == switches and groups[0]["last_switch"]["reason"] == reason and
          len(groups[0]["members"]) == 2, f"/info redundancy {groups}")


def test_publisher_killed_moves_items_to_the_standby():
    with Stack("redund-publisher") as stack:
        pair = Pair(stack)
        check_visible_before = metric(admin_port(pair.server), 'mdcast_server_redundancy_standby_sources{service="MDCAST"}')
        check(check_visible_before == 1, f"{check_visible_before} standbys before the failure")
        pair.sources[1].popen.kill()  # kill -9: the distributor sees its connection drop
        pair.wait_served_by(2)
        check(switch_lines(pair.server) == [("1", "2", "service_down")], f"switches {switch_lines(pair.server)}")
        check_visible(pair.server, active=2, standbys=0, reason="service_down", switches=1)
        pair.finish(switches=1)


def test_distributor_killed_moves_items_to_the_standby():
    with Stack("redund-killed") as stack:
        pair = Pair(stack)
        pair.distributor(1).popen.kill()
        pair.wait_served_by(2)
        check(switch_lines(pair.server) == [("1", "2", "source_silent")], f"switches {switch_lines(pair.server)}")
        pair.finish(switches=1)


def test_distributor_stopped_moves_items_and_back():
    """SIGSTOP of the active distributor: silent, items move; SIGCONT: it is heard
    again, and after the hold-down the items move back to it (it ranks first)."""
    with Stack("redund-stopped") as stack:
        pair = Pair(stack)
        dist1 = pair.distributor(1)
        dist1.popen.send_signal(signal.SIGSTOP)
        try:
            pair.wait_served_by(2)
        finally:
            dist1.popen.send_signal(signal.SIGCONT)
        pair.wait_served_by(1)
        check(switch_lines(pair.server) == [("1", "2", "source_silent"), ("2", "1", "preferred")],
              f"switches {switch_lines(pair.server)}")
        check_visible(pair.server, active=1, standbys=1, reason="preferred", switches=2)
        pair.finish(switches=2)


def test_standby_silent_and_back_is_hot_again():
    """The standby stops for longer than the silence timeout and comes back: its items went
    suspect, and the server re-images them although nobody subscribes to them, so the next
    failure of the active side still switches from current images."""
    with Stack("redund-standby") as stack:
        pair = Pair(stack)
        dist2 = pair.distributor(2)
        dist2.popen.send_signal(signal.SIGSTOP)
        try:
            wait_for_log(pair.server, "nothing from distributor 2", timeout=SILENT_MS / 1000 + 15)
        finally:
            dist2.popen.send_signal(signal.SIGCONT)
        port = admin_port(pair.server)
        wait_until(lambda: metric(port, "mdcast_server_items_suspect") == 0, 20, "the standby's items current again")
        pair.sources[1].popen.kill()
        pair.wait_served_by(2)
        check(switch_lines(pair.server) == [("1", "2", "service_down")], f"switches {switch_lines(pair.server)}")
        pair.finish(switches=1)


def test_a_standby_with_the_same_values_sends_nothing():
    """Both sources publish their images only (--rate 0), so the standby's values equal the
    active's: at the failover the clients are sent nothing at all, each item keeps its id and
    follows distributor 2, and the switch counts every item unchanged."""
    with Stack("redund-same") as stack:
        pair = Pair(stack, rate=0)
        port = admin_port(pair.server)
        before = len(messages_so_far(pair.client))
        pair.sources[1].popen.kill()
        wait_until(lambda: metric(port, "mdcast_server_redundancy_items_switched_total") == ITEMS, 20,
                   "every item switched")
        check(metric(port, "mdcast_server_redundancy_items_unchanged_total") == ITEMS, "items unchanged metric")
        served = pair.served_by()
        check(all(served.get(n) == {2} for n in NAMES), f"served by {served}")
        items = json.loads(pair.items_json())["items"]
        check(all(i["id"] >> 40 == 1 for i in items if i["subscribers"]), "a subscribed item changed its id")
        time.sleep(0.5)
        after = messages_so_far(pair.client)[before:]
        check(not [m for m in after if m["type"] != "summary"], f"the client was sent {after[:3]}")
        check(switch_lines(pair.server) == [("1", "2", "service_down")], f"switches {switch_lines(pair.server)}")
        pair.finish(switches=1)


def test_items_the_standby_lacks_are_told_why():
    """The standby publishes 15 of the 20 items: at the switch those 15 move with no status,
    the other 5 get one suspect status naming why, and stay with it."""
    with Stack("redund-lacks") as stack:
        pair = Pair(stack, standby_items=15)
        pair.sources[1].popen.kill()
        pair.wait_served_by(2, names=NAMES[:15])
        pair.finish(switches=1, names=NAMES[:15], statuses=5)
        items = by_item(messages(pair.client))
        for name in NAMES[15:]:
            statuses = [m for m in items[name] if m["type"] == "status"]
            check(len(statuses) == 1 and items[name][-1] is statuses[0], f"{name}: statuses {statuses}")
            check(statuses[0]["data"] == "suspect" and statuses[0]["code"] == "SOURCE_DOWN" and
                  "to distributor 2 (service_down), which does not publish this item" in statuses[0]["text"],
                  f"{name}: status {statuses[0]}")
        sdk = [e for e in json_events(pair.sdk) if e.get("event") == "status"]
        check(sorted(e["item"] for e in sdk) == NAMES[15:], f"SDK statuses for {[e['item'] for e in sdk]}")


def test_flapping_source_switches_back_once_after_the_hold_down():
    """The preferred publisher comes back, goes again within the hold-down, and
    comes back for good: one switch away, one switch back, no storm."""
    with Stack("redund-flap") as stack:
        pair = Pair(stack)
        pair.sources[1].popen.kill()
        pair.wait_served_by(2)
        for attempt in range(2):
            source = pair.start_source(1, name=f"source1-again{attempt}")
            wait_for_log(source, "items registered")
            if attempt == 0:
                time.sleep(HOLD_DOWN_MS / 1000 / 3)  # back for less than the hold-down
                source.popen.kill()
        pair.wait_served_by(1)
        check(switch_lines(pair.server) == [("1", "2", "service_down"), ("2", "1", "preferred")],
              f"switches {switch_lines(pair.server)}")
        pair.finish(switches=2)


if __name__ == "__main__":
    run([test_publisher_killed_moves_items_to_the_standby,
         test_distributor_killed_moves_items_to_the_standby,
         test_distributor_stopped_moves_items_and_back,
         test_standby_silent_and_back_is_hot_again,
         test_a_standby_with_the_same_values_sends_nothing,
         test_items_the_standby_lacks_are_told_why,
         test_flapping_source_switches_back_once_after_the_hold_down])
