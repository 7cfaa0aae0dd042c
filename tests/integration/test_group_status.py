"""Group statuses end to end (issue 26): a source or a distributor going down
is one GroupStatus per client that asked for them at login, not one ItemStatus
per item, while an older client still gets one ItemStatus per item and an SDK
application (sdk-consumer-probe) still sees one status per item, with the same
code and text.

The scenario: a distributor, a server, `mdcast-source --items N`, an older raw
client, a raw client taking group statuses, an SDK consumer and a WebSocket/JSON
client, all subscribed to every item; the source is stopped and started again, then the distributor
is killed with SIGKILL and started again, and the source with it.

`python3 test_group_status.py --measure N` runs the same scenario with N items
and prints the frames and bytes each raw client received in each phase (the
figures in docs/server.md)."""
import argparse
import asyncio
import collections
import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import check, wait_until  # noqa: E402
from status_counting_client import GROUP_STATUS, ITEM_STATUS, REFRESH, CountingClient  # noqa: E402

ITEMS = 1500
KIND_NAMES = {ITEM_STATUS: "ItemStatus", GROUP_STATUS: "GroupStatus", REFRESH: "Refresh", 21: "Update", 4: "Pong"}


def names(count):
    return [f"ITEM{i:06d}" for i in range(count)]


class WebSocketCounter:
    """A WebSocket/JSON client subscribed to every item on its own thread,
    counting Status messages by (Code, Text)."""

    def __init__(self, port, items):
        import ws_client  # needs Python's websockets: only the test uses it
        self.ws_client, self.port, self.items = ws_client, port, items
        self.statuses = collections.Counter()
        self.refreshes = 0
        self.lock = threading.Lock()
        self.stop = False
        self.ready = threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self.thread.start()
        check(self.ready.wait(10), "the WebSocket client did not log in")

    async def _run(self):
        ws = await self.ws_client.connect(self.port)
        await self.ws_client.login(ws)
        await ws.send(json.dumps({"ID": 2, "Key": {"Service": "MDCAST", "Name": names(self.items)}}))
        self.ready.set()
        while not self.stop:
            try:
                messages = await self.ws_client.receive(ws, 0.2)
            except asyncio.TimeoutError:
                continue
            with self.lock:
                for m in messages:
                    # Item statuses (a batch's own Status names no Key).
                    if m.get("Type") == "Status" and m.get("Domain") != "Login" and "Key" in m:
                        self.statuses[(m["State"].get("Code"), m["State"].get("Text"))] += 1
                    elif m.get("Type") == "Refresh":
                        self.refreshes += 1
        await ws.close()

    def count(self):
        with self.lock:
            return collections.Counter(self.statuses), self.refreshes


class Scenario:
    def __init__(self, stack, items, sdk=True, server_extra="  source_silent_ms: 1000\n"):
        self.stack, self.items = stack, items
        self.distributor = stack.distributor()
        ws_port = harness.free_port() if sdk else 0
        ws_clients = f"  ws_port: {ws_port}\n  ws_dictionary_file: {harness.ETC}/fields.dict\n"
        self.server = stack.server(1, extra_clients=ws_clients if sdk else "",
                                   extra=server_extra)
        self.source = self.start_source()
        port = stack.client_ports[1]
        self.older = CountingClient(port, group_status=False, user="older")
        self.grouped = CountingClient(port, group_status=True, user="grouped")
        self.clients = {"older": self.older, "grouped": self.grouped}
        for client in self.clients.values():
            client.subscribe("MDCAST", names(items))
        self.sdk = self.ws = None
        if sdk:
            harness.wait_for_port(ws_port, self.server)
            self.ws = WebSocketCounter(ws_port, items)
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

    def settle(self, quiet_s=1.0, timeout=120):
        """Waits until no client has received a status or an image for `quiet_s`."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            now = [c.statuses_and_images() for c in self.clients.values()]
            if now == last:
                return
            last = now
            time.sleep(quiet_s)
        raise AssertionError(f"the clients still receiving after {timeout} s")

    def mark(self, name):
        """What each client has received once things are quiet, under `name`."""
        self.settle()
        self.marks[name] = {n: c.snapshot() for n, c in self.clients.items()}

    def between(self, client, start, end):
        """{kind: (frames, bytes)} `client` received between two marks."""
        (f0, b0, _, _), (f1, b1, _, _) = self.marks[start][client], self.marks[end][client]
        return {k: (f1[k] - f0[k], b1[k] - b0[k]) for k in set(f1) | set(f0) if f1[k] != f0[k]}

    def told_between(self, client, start, end):
        """{status code: items told} `client` heard between two marks, either way."""
        (_, _, i0, g0), (_, _, i1, g1) = self.marks[start][client], self.marks[end][client]
        told = collections.Counter()
        for (code, _), n in list((i1 - i0).items()) + list((g1 - g0).items()):
            told[code] += n
        return dict(told)

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
        self.mark("distributor back")
        self.source = self.start_source()
        self.wait_for_refreshes(3 * n, 120)
        self.mark("images again")


PHASES = [("start", "source down"), ("source down", "source back"),
          ("source back", "distributor down"), ("distributor down", "distributor back"),
          ("distributor back", "images again")]


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
            if end == "distributor back":  # the reset: one group frame
                check(grouped.get(GROUP_STATUS, (0,))[0] == 1, f"{start} -> {end}: {grouped}")
                check(older.get(ITEM_STATUS, (0,))[0] == ITEMS, f"{start} -> {end}: {older}")
        # The same statuses, item by item or grouped: codes, texts and item counts.
        _, _, older_items, _ = scenario.older.snapshot()
        _, _, grouped_items, grouped_groups = scenario.grouped.snapshot()
        check(not grouped_items, f"the grouped client got item statuses {grouped_items}")
        check(grouped_groups == older_items, f"grouped {grouped_groups} != older {older_items}")

        # The WebSocket client gets one JSON Status per item, the same texts.
        wait_until(lambda: sum(scenario.ws.count()[0].values()) >= sum(older_items.values()) and
                   scenario.ws.count()[1] >= 3 * ITEMS, 30, "every WebSocket status and image")
        scenario.ws.stop = True
        ws_statuses, ws_refreshes = scenario.ws.count()
        json_codes = {"SOURCE_DOWN": "SourceDown", "SOURCE_RESET": "SourceReset"}
        check(ws_statuses == collections.Counter({(json_codes[code], text): n
                                                  for (code, text), n in older_items.items()}),
              f"WebSocket statuses {ws_statuses} != {older_items}")
        check(ws_refreshes >= 3 * ITEMS, f"WebSocket refreshes: {ws_refreshes}")

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
        # The older client's 100,000 statuses in one burst pass the default output.max_bytes
        # (8 MB) unless it reads as fast as they come: room enough to count them all.
        # backbone.source_silent_ms stays at its default (3000) here.
        scenario = Scenario(stack, items, sdk=False,
                            server_extra="output:\n  max_bytes: 67108864\n  expected_clients: 2\n")
        try:
            scenario.run()
        finally:
            print_phases(scenario, items)


def print_phases(scenario, items):
    print(f"{items} items; frames / bytes each client received, by phase")
    for start, end in PHASES:
        if end not in scenario.marks:
            break
        for client in ("older", "grouped"):
            got = scenario.between(client, start, end)
            parts = ", ".join(f"{KIND_NAMES.get(k, k)} {f} / {b}" for k, (f, b) in sorted(got.items()))
            print(f"  {start} -> {end:17s} {client:8s} {parts}; items told: "
                  f"{scenario.told_between(client, start, end)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--measure", type=int, help="items: print the figures instead of testing")
    options = parser.parse_args()
    if options.measure:
        measure(options.measure)
    else:
        harness.run([test_one_group_frame_per_client_and_per_item_statuses_for_the_rest])
