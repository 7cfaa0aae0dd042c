"""The client SDK's Publisher end to end through the real distributor and
servers to SDK Consumers and mdcast-client: broadcast and interactive
(sink-driven) services, a failover list, a distributor restart and an
interactive source restart.

sdk-publisher-probe publishes, for item i of its --items list, BID =
(10000 + 100 i + n) * 10^-2 and ACVOL_1 = n in its n-th update (refresh: n so
far), so every value a consumer sees can be checked against its sequence:
ACVOL_1 == sequence as long as the publisher keeps running.
"""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import check  # noqa: E402

ITEMS = ["ALPHA", "BRAVO", "CHARLIE"]


def check_values(events, items=ITEMS):
    """Every image and update carries the values published at its sequence, in
    order; a new source run (a refresh going back) starts a new segment."""
    last = {}
    for e in events:
        if e["event"] not in ("refresh", "update"):
            continue
        item, seq = e["item"], e["seq"]
        n = int(e["fields"]["32"])
        check(n == seq, f"{item}: ACVOL_1 {n} at sequence {seq}")
        mantissa = 10000 + 100 * items.index(item) + n
        check(e["fields"]["22"] == f"{mantissa / 100:.2f}", f"{item}: BID {e['fields']['22']} at {seq}")
        if e["event"] == "update":
            check(seq == last.get(item, -2) + 1, f"{item}: update {seq} after {last.get(item)}")
            check(e["stamp"] > 0, f"{item}: update not stamped")
        last[item] = seq
    return last


def wait_until_published(stack, service, items, instance=1, timeout=10):
    """Snapshots until the server has an image of every item (the publisher has
    registered and refreshed them), so a subscriber started next finds them."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        probe = harness.sdk_consumer(stack, [instance], "--service", service, "--items", ",".join(items),
                                     "--snapshot", "--duration", "1", name="snapshot-probe")
        check(probe.wait(10) == 0, "the snapshot probe failed")
        if sum(e["event"] == "refresh" for e in harness.json_events(probe)) == len(items):
            return
        time.sleep(0.1)
    raise AssertionError(f"{service}: {items} not published within {timeout} s")


def stop(process):
    """Stops a probe; it must exit cleanly (under ThreadSanitizer a race report makes it fail)."""
    process.popen.send_signal(signal.SIGTERM)
    code = process.wait(10)
    check(code == 0, f"{process.name} exited with {code}")
    return harness.json_events(process)


def updates_for(process, items, count, timeout=10):
    return harness.wait_for_events(
        process, lambda ev: all(sum(e["event"] == "update" and e["item"] == i for e in ev) >= count
                                for i in items),
        timeout, f"{count} updates for {items}")


def test_broadcast_to_sdk_consumer_and_mdcast_client():
    with harness.Stack("sdk-pub") as stack:
        stack.distributor()
        stack.server(1)
        stack.server(2)
        dead = harness.free_port()  # the failover list starts with a distributor that is not there
        publisher = harness.sdk_publisher(stack, "--items", ",".join(ITEMS), "--rate", "300",
                                          "--duration", "30", "--service", "SDK",
                                          distributors=f"127.0.0.1:{dead},127.0.0.1:{stack.publisher_port}")
        wait_until_published(stack, "SDK", ITEMS)
        consumer = harness.sdk_consumer(stack, [1], "--service", "SDK", "--items", ",".join(ITEMS))
        client = stack.client(2, "--service", "SDK", "--items", ",".join(ITEMS), "--duration", "3")
        updates_for(consumer, ITEMS, 30)
        client.wait(15)
        check_values(stop(consumer))
        # mdcast-client checks sequences itself; its values are by dictionary name.
        lines = client.json_lines()
        summary = [x for x in lines if x["type"] == "summary"][0]
        check(summary["updates"] > 50 and summary["gaps"] == 0 and summary["duplicates"] == 0,
              f"mdcast-client: {summary}")
        for x in lines:
            if x["type"] == "update":
                check(x["fields"]["ACVOL_1"] == x["seq"], f"mdcast-client saw {x}")
        events = stop(publisher)
        connecting = [e["server"] for e in events if e["event"] == "connection" and e["state"] == "connecting"]
        check(connecting[:2] == [f"127.0.0.1:{dead}", f"127.0.0.1:{stack.publisher_port}"],
              f"failover order: {connecting}")
        check(any(e["event"] == "service" and e["accepted"] for e in events), "service not accepted")
        summary = [e for e in events if e["event"] == "summary"][0]
        check(summary["refreshes_sent"] == len(ITEMS) and summary["rejections"] == 0, f"{summary}")


def test_distributor_restart_reimages_through_the_publisher():
    with harness.Stack("sdk-pub-restart") as stack:
        distributor = stack.distributor()
        stack.server(1)
        publisher = harness.sdk_publisher(stack, "--items", ",".join(ITEMS), "--rate", "300",
                                          "--duration", "30", "--service", "SDK")
        wait_until_published(stack, "SDK", ITEMS)
        consumer = harness.sdk_consumer(stack, [1], "--service", "SDK", "--items", ",".join(ITEMS))
        updates_for(consumer, ITEMS, 10)
        restarted_at = time.monotonic_ns()
        distributor.stop()
        stack.distributor()  # same ports, new epoch
        events = harness.wait_for_events(
            consumer, lambda ev: all(any(e["event"] == "update" and e["item"] == i and e["t"] > restarted_at
                                         for e in ev) for i in ITEMS),
            15, "updates after the restart")
        for item in ITEMS:
            after = [e for e in events if e.get("item") == item and e["t"] > restarted_at]
            kinds = [(e["event"], e.get("code")) for e in after]
            check(("status", "SOURCE_RESET") in kinds, f"{item}: no SOURCE_RESET: {kinds[:4]}")
            rest = [e["event"] for e in after[kinds.index(("status", "SOURCE_RESET")) + 1:]]
            check("refresh" in rest and "update" not in rest[:rest.index("refresh")],
                  f"{item}: after SOURCE_RESET: {rest[:5]}")
        check_values(stop(consumer))
        events = stop(publisher)
        summary = [e for e in events if e["event"] == "summary"][0]
        check(summary["connection_losses"] == 1 and summary["connections"] == 2, f"{summary}")


def test_interactive_service_requests_answers_and_cache():
    with harness.Stack("sdk-interactive") as stack:
        stack.distributor()
        stack.server(1)
        stack.server(2)
        publisher = harness.sdk_publisher(stack, "--items", ",".join(ITEMS), "--rate", "300",
                                          "--duration", "30", "--service", "ONDEMAND", "--interactive")
        harness.wait_for_events(publisher, lambda ev: any(e["event"] == "service" for e in ev))
        first = harness.sdk_consumer(stack, [1], "--service", "ONDEMAND", "--items", "ALPHA,BRAVO,NOPE",
                                     "--directory", name="consumer1")
        updates_for(first, ["ALPHA", "BRAVO"], 10)
        # Another server wants ALPHA too: the distributor answers from its cache.
        second = harness.sdk_consumer(stack, [2], "--service", "ONDEMAND", "--items", "ALPHA", name="consumer2")
        updates_for(second, ["ALPHA"], 10)
        events = stop(first)
        check_values(events)
        status = [e for e in events if e["event"] == "status" and e["item"] == "NOPE"]
        check(status and status[0]["code"] == "NOT_FOUND" and status[0]["stream"] == "closed", f"{status}")
        directory = [e for e in events if e["event"] == "directory"]
        check(directory and directory[0]["services"][0]["interactive"], f"{directory}")
        check_values(stop(second))
        events = stop(publisher)
        requests = sorted(e["item"] for e in events if e["event"] == "request")
        check(requests == ["ALPHA", "BRAVO", "NOPE"], f"the source was asked for {requests}")
        check(not any(e["event"] == "request" and e["item"] == "CHARLIE" for e in events),
              "an item nobody wanted was requested")


def test_interactive_source_restart_reimages_what_is_wanted():
    with harness.Stack("sdk-interactive-restart") as stack:
        stack.distributor()
        stack.server(1)
        args = ("--items", ",".join(ITEMS), "--rate", "300", "--duration", "30", "--service", "ONDEMAND",
                "--interactive")
        publisher = harness.sdk_publisher(stack, *args)
        harness.wait_for_events(publisher, lambda ev: any(e["event"] == "service" for e in ev))
        consumer = harness.sdk_consumer(stack, [1], "--service", "ONDEMAND", "--items", "ALPHA,CHARLIE")
        updates_for(consumer, ["ALPHA", "CHARLIE"], 10)
        killed_at = time.monotonic_ns()
        publisher.popen.kill()
        publisher.popen.wait()
        harness.wait_for_events(
            consumer, lambda ev: sum(e["event"] == "status" and e["code"] == "SOURCE_DOWN" for e in ev) == 2,
            10, "SOURCE_DOWN for both items")
        again = harness.sdk_publisher(stack, *args, name="publisher-again")

        def after_source_down(events, item):
            """The item's events after its SOURCE_DOWN: updates sent before the kill may still
            arrive after killed_at, ahead of the status, and are not the new source's."""
            mine = [e for e in events if e.get("item") == item and e["t"] > killed_at]
            down = next(i for i, e in enumerate(mine) if e["event"] == "status" and e["code"] == "SOURCE_DOWN")
            return mine[down + 1:]

        events = harness.wait_for_events(
            consumer, lambda ev: all(any(e["event"] == "update" for e in after_source_down(ev, i))
                                     for i in ("ALPHA", "CHARLIE")),
            15, "updates from the new source")
        for item in ("ALPHA", "CHARLIE"):
            after = after_source_down(events, item)
            rest = [e["event"] for e in after]
            check("refresh" in rest and "update" not in rest[:rest.index("refresh")],
                  f"{item}: after SOURCE_DOWN: {rest[:5]}")
            check(after[rest.index("refresh")]["data"] == "ok", f"{item}: the new image is not ok")
        stop(consumer)
        requests = sorted(e["item"] for e in stop(again) if e["event"] == "request")
        check(requests == ["ALPHA", "CHARLIE"], f"the new source was asked for {requests}")


def flushed_event(process, timeout=15):
    events = harness.wait_for_events(process, lambda ev: any(e["event"] == "flushed" for e in ev),
                                     timeout, "a flushed line")
    return [e for e in events if e["event"] == "flushed"][0]


def test_flush_returns_once_the_distributor_has_everything():
    with harness.Stack("sdk-flush") as stack:
        stack.distributor()
        stack.server(1)
        publisher = harness.sdk_publisher(stack, "--items", ",".join(ITEMS), "--rate", "2000",
                                          "--duration", "20", "--service", "SDK", "--flush-after", "400")
        flushed = flushed_event(publisher)
        check(flushed["ok"], f"flush not acknowledged: {flushed}")
        # Acknowledged means written to the distributor and taken: nothing published before it waits.
        check(flushed["updates_sent"] >= flushed["published"], f"flush returned early: {flushed}")
        stop(publisher)
        # No distributor: the flush cannot be acknowledged and returns false at its timeout.
        dead = harness.free_port()
        lonely = harness.sdk_publisher(stack, "--items", "ALPHA", "--rate", "100", "--duration", "10",
                                       "--service", "SDK", "--flush-after", "1", "--flush-timeout-ms", "500",
                                       distributors=f"127.0.0.1:{dead}", name="lonely")
        flushed = flushed_event(lonely)
        check(not flushed["ok"] and flushed["ms"] >= 450, f"flush without a distributor: {flushed}")
        stop(lonely)


def test_updates_before_registration_are_sent_in_order():
    """The ordering rule: updates published after the refresh but before the distributor has
    registered the item are sent after the refresh with their own sequence numbers, not merged."""
    with harness.Stack("sdk-order") as stack:
        stack.distributor()
        stack.server(1)
        publisher = harness.sdk_publisher(stack, "--items", ",".join(ITEMS), "--rate", "1",
                                          "--duration", "20", "--service", "SDK",
                                          "--updates-before-start", "5", "--flush-after", "1")
        check(flushed_event(publisher)["ok"], "flush failed")
        events = stop(publisher)
        summary = [e for e in events if e["event"] == "summary"][-1]
        check(summary["updates_held"] == 0, f"updates merged into the image: {summary}")
        check(summary["updates_sent"] >= 5 * len(ITEMS), f"early updates not sent: {summary}")
        snapshot = harness.sdk_consumer(stack, [1], "--service", "SDK", "--items", ",".join(ITEMS),
                                        "--snapshot", "--duration", "1", name="snapshot")
        check(snapshot.wait(10) == 0, "snapshot probe failed")
        images = [e for e in harness.json_events(snapshot) if e["event"] == "refresh"]
        check(len(images) == len(ITEMS) and all(e["seq"] >= 5 for e in images), f"images {images}")
        check_values(images)


if __name__ == "__main__":
    harness.run([test_flush_returns_once_the_distributor_has_everything,
                 test_updates_before_registration_are_sent_in_order,
                 test_broadcast_to_sdk_consumer_and_mdcast_client,
                 test_distributor_restart_reimages_through_the_publisher,
                 test_interactive_service_requests_answers_and_cache,
                 test_interactive_source_restart_reimages_what_is_wanted])
