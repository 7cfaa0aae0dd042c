"""Group statuses end to end (issue 26): a source or a distributor going down
is one GroupStatus per client that asked for them at login, not one ItemStatus
per item, while an older client still gets one ItemStatus per item and an SDK
application (sdk-consumer-probe) still sees one status per item, with the same
code and text.

The scenario: a distributor, a server, `mdcast-source --items N`, an older raw
client, a raw client taking group statuses and an SDK consumer, all subscribed
to every item; the source is stopped and started again, then the distributor
is killed with SIGKILL and started again, and the source with it.

`python3 test_group_status.py --measure N` runs the same scenario with N items
and prints the frames and bytes each raw client received in each phase (the
figures in docs/server.md)."""
import argparse
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import check  # noqa: E402
from status_counting_client import GROUP_STATUS, ITEM_STATUS, REFRESH, CountingClient  # noqa: E402

ITEMS = 1500
KIND_NAMES = {ITEM_STATUS: "ItemStatus", GROUP_STATUS: "GroupStatus", REFRESH: "Refresh"}


def names(count):
    return [f"ITEM{i:06d}" for i in range(count)]


def wait_until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"no {what} within {timeout} s")


class Scenario:
    def __init__(self, stack, items, sdk=True):
        self.stack, self.items = stack, items
        self.distributor = stack.distributor()
        self.server = stack.server(1, extra="  source_silent_ms: 1000\n")
        self.source = self.start_source()
        port = stack.client_ports[1]
        self.older = CountingClient(port, group_status=False, user="older")
        self.grouped = CountingClient(port, group_status=True, user="grouped")
        self.clients = {"older": self.older, "grouped": self.grouped}
        for client in self.clients.values():
            client.subscribe("MDCAST", names(items))
        self.sdk = None
        if sdk:
            self.sdk = harness.sdk_consumer(stack, [1], "--service", "MDCAST", "--items",
                                            ",".join(names(items)), "--quiet-updates",
                                            "--duration", "120", name="sdk")
        self.wait_for_refreshes(items, 60)
        self.marks = {}

    def start_source(self):
        source = self.stack.source("--items", str(self.items), "--rate", "200", "--duration", "600")
        harness.wait_for_log(source, "items registered", timeout=60)
        return source

    def wait_for_refreshes(self, count, timeout):
        wait_until(lambda: all(c.snapshot()[0][REFRESH] >= count for c in self.clients.values()),
                   timeout, f"{count} refreshes to each client")

    def wait_for_statuses(self, code, count, timeout=30):
        wait_until(lambda: all(c.statuses_by_code()[code] >= count for c in self.clients.values()),
                   timeout, f"{count} {code} statuses to each client")

    def mark(self, name):
        """What each client has received so far, under `name`."""
        self.marks[name] = {n: c.snapshot() for n, c in self.clients.items()}

    def between(self, client, start, end):
        """{kind: (frames, bytes)} `client` received between two marks."""
        (f0, b0, _, _), (f1, b1, _, _) = self.marks[start][client], self.marks[end][client]
        return {k: (f1[k] - f0[k], b1[k] - b0[k]) for k in set(f1) | set(f0) if f1[k] != f0[k]}

    def run(self):
        """Source stopped and back, distributor killed and back; marks each phase."""
        n = self.items
        self.mark("start")
        self.source.popen.send_signal(signal.SIGTERM)
        self.source.popen.wait(timeout=30)
        self.wait_for_statuses("SOURCE_DOWN", n)
        self.mark("source down")
        self.source = self.start_source()
        self.wait_for_refreshes(2 * n, 120)
        self.mark("source back")
        self.distributor.popen.kill()
        self.distributor.popen.wait()
        self.wait_for_statuses("SOURCE_DOWN", 2 * n)
        self.mark("distributor down")
        self.source.popen.wait(timeout=30)  # it stops when its distributor goes
        self.distributor = self.stack.distributor()
        self.wait_for_statuses("SOURCE_RESET", n, 60)
        self.source = self.start_source()
        self.wait_for_refreshes(3 * n, 120)
        time.sleep(0.5)  # anything straggling after the images
        self.mark("distributor back")


PHASES = [("start", "source down"), ("source down", "source back"),
          ("source back", "distributor down"), ("distributor down", "distributor back")]


def sdk_statuses(events):
    return [e for e in events if e["event"] == "status"]


def test_one_group_frame_per_client_and_per_item_statuses_for_the_rest():
    with harness.Stack("group-status") as stack:
        scenario = Scenario(stack, ITEMS)
        scenario.run()
        for start, end in PHASES:
            grouped = scenario.between("grouped", start, end)
            older = scenario.between("older", start, end)
            check(ITEM_STATUS not in grouped, f"{start} -> {end}: the grouped client got "
                  f"{grouped.get(ITEM_STATUS)} ItemStatus frames")
            check(REFRESH not in grouped or grouped[REFRESH][0] == ITEMS, f"{start} -> {end}: {grouped}")
            if end in ("source down", "distributor down"):
                check(grouped.get(GROUP_STATUS, (0,))[0] == 1, f"{start} -> {end}: {grouped}")
                check(older.get(ITEM_STATUS, (0,))[0] == ITEMS, f"{start} -> {end}: {older}")
            if end == "distributor back":  # the reset: one group frame, the images per item
                check(grouped.get(GROUP_STATUS, (0,))[0] == 1, f"{start} -> {end}: {grouped}")
                check(older.get(ITEM_STATUS, (0,))[0] >= ITEMS, f"{start} -> {end}: {older}")
        # The same statuses, item by item or grouped: codes, texts and item counts.
        _, _, older_items, _ = scenario.older.snapshot()
        _, _, grouped_items, grouped_groups = scenario.grouped.snapshot()
        check(not grouped_items, f"the grouped client got item statuses {grouped_items}")
        check(grouped_groups == older_items, f"grouped {grouped_groups} != older {older_items}")

        # The SDK application sees one status per item, with the older client's texts.
        expected = sum(older_items.values())
        events = harness.wait_for_events(scenario.sdk, lambda ev: len(sdk_statuses(ev)) >= expected, 30,
                                         f"{expected} SDK statuses")
        seen = {}
        for e in sdk_statuses(events):
            key = (e["code"], e["text"])
            seen[key] = seen.get(key, 0) + 1
        check(seen == dict(older_items), f"SDK statuses {seen} != {dict(older_items)}")
        for code in ("SOURCE_DOWN", "SOURCE_RESET"):
            items = {e["item"] for e in sdk_statuses(events) if e["code"] == code}
            check(items == set(names(ITEMS)), f"{code}: {len(items)} items told")

        port = harness.admin_port(scenario.server)
        groups = harness.metric(port, "mdcast_server_group_statuses_out_total")
        check(groups == 6, f"group statuses out: {groups}")  # 3 events x (raw grouped client, SDK)
        check(harness.metric(port, "mdcast_server_group_status_items_total") == 6 * ITEMS,
              "group status items")


def measure(items):
    with harness.Stack("group-status-measure") as stack:
        scenario = Scenario(stack, items, sdk=False)
        scenario.run()
        print(f"{items} items; frames / bytes each client received, by phase")
        for start, end in PHASES:
            for client in ("older", "grouped"):
                got = scenario.between(client, start, end)
                parts = ", ".join(f"{KIND_NAMES.get(k, k)} {f} / {b}" for k, (f, b) in sorted(got.items()))
                print(f"  {start} -> {end:17s} {client:8s} {parts}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--measure", type=int, help="items: print the figures instead of testing")
    options = parser.parse_args()
    if options.measure:
        measure(options.measure)
    else:
        harness.run([test_one_group_frame_per_client_and_per_item_statuses_for_the_rest])
