"""The client SDK's Consumer against real binaries: streaming with the
dispatch queue, views by dictionary name, snapshots, batches, unknown items,
unsubscribe, and the directory. Every value is checked against what
mdcast-source publishes (docs/tools.md).

`python3 test_sdk_consumer.py --measure-cpu RATE SECONDS [--dispatch] [--timed-writes MS]` instead
prints the consumer's CPU time per million updates received (docs/sdk.md); it
is not part of the suite."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import check  # noqa: E402


def bid(item, seq):
    return f"{(10000 + 100 * int(item[4:]) + seq % 1000) / 100:.2f}"


def ask(item, seq):
    return f"{(10000 + 100 * int(item[4:]) + seq % 1000 + 5) / 100:.2f}"


def stop(process):
    """Stops a probe; it must exit cleanly (under ThreadSanitizer a race report makes it fail)."""
    process.popen.send_signal(signal.SIGTERM)
    code = process.wait(10)
    check(code == 0, f"{process.name} exited with {code}")
    return harness.json_events(process)


def with_stack(name, test):
    with harness.Stack(name) as stack:
        stack.distributor()
        stack.server(1)
        source = stack.source("--items", "10", "--rate", "1000", "--duration", "60")
        harness.wait_for_log(source, "items registered")
        test(stack)


def test_dispatch_queue_with_a_view():
    def run(stack):
        items = ["ITEM000001", "ITEM000002", "ITEM000003"]
        consumer = harness.sdk_consumer(stack, [1], "--items", ",".join(items), "--dispatch",
                                        "--view", "BID,ASK", "--duration", "20")
        harness.wait_for_events(consumer, lambda ev: sum(e["event"] == "update" for e in ev) >= 150,
                                what="150 updates")
        events = stop(consumer)
        last = {}
        for e in events:
            if e["event"] not in ("refresh", "update"):
                continue
            check(set(e["fields"]) == {"22", "25"}, f"view not applied: {e['fields']}")
            check(e["fields"]["22"] == bid(e["item"], e["seq"]), f"BID at {e}")
            check(e["fields"]["25"] == ask(e["item"], e["seq"]), f"ASK at {e}")
            check(e["seq"] > last.get(e["item"], -1), f"sequence went back: {e}")
            if e["event"] == "update":
                check(e["stamp"] > 0, "update without the publisher's stamp")
            last[e["item"]] = e["seq"]
        check(set(last) == set(items), f"items seen: {set(last)}")
    with_stack("sdk-dispatch", run)


def test_snapshot_batch_and_unknown_item():
    def run(stack):
        consumer = harness.sdk_consumer(stack, [1], "--items", "ITEM000004,ITEM000005,NOSUCH",
                                        "--snapshot", "--duration", "20")
        harness.wait_for_events(
            consumer, lambda ev: sum(e["event"] in ("refresh", "status") for e in ev) == 3,
            what="two snapshots and a status")
        time.sleep(0.3)  # nothing may follow a snapshot
        events = stop(consumer)
        refreshes = [e for e in events if e["event"] == "refresh"]
        check(sorted(e["item"] for e in refreshes) == ["ITEM000004", "ITEM000005"], f"{refreshes}")
        for e in refreshes:
            check(e["snapshot"] and e["stream"] == "closed", f"not a snapshot: {e}")
            check(e["fields"]["22"] == bid(e["item"], e["seq"]), f"BID at {e}")
            check(e["fields"]["3"] == e["item"], f"DSPLY_NAME at {e}")
        statuses = [e for e in events if e["event"] == "status"]
        check(len(statuses) == 1 and statuses[0]["item"] == "NOSUCH" and
              statuses[0]["code"] == "NOT_FOUND" and statuses[0]["stream"] == "closed", f"{statuses}")
        check(not any(e["event"] == "update" for e in events), "a snapshot received updates")
    with_stack("sdk-snapshot", run)


def test_unsubscribe_from_a_handler_stops_the_item():
    def run(stack):
        consumer = harness.sdk_consumer(stack, [1], "--items", "ITEM000006,ITEM000007",
                                        "--unsubscribe-after", "20", "--directory", "--duration", "20")
        harness.wait_for_events(consumer, lambda ev: sum(e["event"] == "unsubscribed" for e in ev) == 2,
                                what="both items unsubscribed")
        time.sleep(0.5)  # the source keeps publishing both items meanwhile
        events = stop(consumer)
        gone = set()
        for e in events:
            if e["event"] == "unsubscribed":
                gone.add(e["h"])
            elif e["event"] in ("update", "refresh", "status"):
                check(e["h"] not in gone, f"event after unsubscribe: {e}")
        updates = [e for e in events if e["event"] == "update"]
        check(len(updates) == 40, f"{len(updates)} updates, expected 20 per item")
        directory = [e for e in events if e["event"] == "directory"]
        # One distributor's service: no redundancy group (group_members 0).
        check(directory and directory[0]["services"] == [
                  {"name": "MDCAST", "up": True, "interactive": False, "id": 1 << 16 | 1, "group_members": 0,
                   "group_active": False}],
              f"directory: {directory}")
    with_stack("sdk-unsubscribe", run)


def measure_cpu(rate, seconds, extra, timed_writes_ms=0):
    """`timed_writes_ms` > 0 runs the server with output.timed_writes (the throughput
    profile): fewer, larger reads and far fewer wake-ups for the consumer."""
    with harness.Stack("sdk-cpu") as stack:
        stack.distributor()
        stack.server(1, extra=f"output:\n  timed_writes: true\n  flush_interval_ms: {timed_writes_ms}"
                     if timed_writes_ms > 0 else "")
        source = stack.source("--items", "1000", "--rate", str(rate), "--duration", str(seconds + 10))
        harness.wait_for_log(source, "items registered")
        items = ",".join(f"ITEM{i:06d}" for i in range(1000))
        consumer = harness.sdk_consumer(stack, [1], "--items", items, "--quiet-updates",
                                        "--duration", str(seconds), *extra)
        consumer.wait(seconds + 30)
        summary = [e for e in harness.json_events(consumer) if e["event"] == "summary"][0]
        per_million = summary["cpu_s"] / summary["updates"] * 1e6
        print(f"{summary['updates']} updates in {seconds} s ({summary['updates'] / seconds:.0f}/s), "
              f"consumer CPU {summary['cpu_s']:.3f} s: {per_million:.3f} CPU-s per million updates")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--measure-cpu":
        args = sys.argv[4:]
        timed = 0
        if "--timed-writes" in args:
            at = args.index("--timed-writes")
            timed = int(args[at + 1])
            del args[at:at + 2]
        measure_cpu(int(sys.argv[2]), int(sys.argv[3]), args, timed)
        sys.exit(0)
    harness.run([test_dispatch_queue_with_a_view, test_snapshot_batch_and_unknown_item,
                 test_unsubscribe_from_a_handler_stops_the_item])
