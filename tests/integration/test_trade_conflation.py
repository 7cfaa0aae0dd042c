"""Trade-safe conflation end to end: mdcast-source publishes 500 updates/s per
item and marks every 7th update of each item a trade (--trade-every 7); an SDK
consumer subscribed with conflate_ms 200 gets every trade on its own, in order,
with its own values, the quotes between them conflated, and the counts add up:
the conflated updates' stands_for plus one per update sent as published equals
the updates published after its refresh."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import check  # noqa: E402

ITEMS = ["ITEM000000", "ITEM000001"]
TRADE_EVERY = 7


def stream_of(events, item):
    """The item's refresh and the updates after it, up to its status."""
    refresh, updates = None, []
    for e in events:
        if e.get("item") != item:
            continue
        if e["event"] == "refresh":
            refresh, updates = e, []
        elif e["event"] == "update":
            updates.append(e)
        elif e["event"] == "status":
            break
    check(refresh is not None, f"{item}: no refresh")
    return refresh, updates


def check_item(events, item):
    refresh, updates = stream_of(events, item)
    check(len(updates) > 10, f"{item}: only {len(updates)} updates")
    seqs = [e["seq"] for e in updates]
    check(all(a < b for a, b in zip(seqs, seqs[1:])), f"{item}: sequence not increasing")
    # Every trade published after the refresh arrives, marked, on its own, in order.
    first, last = refresh["seq"] + 1, updates[-1]["seq"]
    published_trades = [s for s in range(first, last + 1) if s % TRADE_EVERY == 0]
    got_trades = [e["seq"] for e in updates if e["trade"]]
    check(got_trades == published_trades,
          f"{item}: trades {got_trades[:10]}… of {len(got_trades)}, published {len(published_trades)}")
    check(not any(e["trade"] and e["conflated"] for e in updates), f"{item}: a trade conflated")
    for e in updates:
        if e["trade"]:  # its own values: ACVOL_1 = 10 x its sequence, as published
            check(int(e["fields"]["32"]) == 10 * e["seq"], f"{item}: trade {e['seq']} values")
    # Quotes are conflated, and what the subscriber got stands for all that was published.
    conflated = [e for e in updates if e["conflated"]]
    check(len(conflated) > 5, f"{item}: only {len(conflated)} conflated updates")
    check(all(e["stands_for"] >= 1 for e in conflated), f"{item}: a conflated update counts 0")
    check(all(e["first_stamp"] <= e["stamp"] for e in conflated), f"{item}: span negative")
    stands_for = sum(e["stands_for"] if e["conflated"] else 1 for e in updates)
    check(stands_for == last - refresh["seq"],
          f"{item}: updates stand for {stands_for}, published {last - refresh['seq']}")


def test_trades_pass_conflation_in_order_and_counts_add_up():
    with harness.Stack("trade-conflation") as stack:
        stack.distributor()
        stack.server(1)
        source = stack.source("--items", "2", "--rate", "1000", "--duration", "30",
                              "--trade-every", str(TRADE_EVERY))
        harness.wait_for_log(source, "items registered")
        args = ("--service", "MDCAST", "--items", ",".join(ITEMS), "--duration", "20")
        paced = harness.sdk_consumer(stack, [1], *args, "--conflate-ms", "200", name="paced")
        harness.wait_for_events(paced, lambda ev: sum(e["event"] == "refresh" for e in ev) == 2)
        time.sleep(3)
        source.popen.kill()
        source.popen.wait()
        # SOURCE_DOWN follows whatever was owed: the stream up to it is complete.
        harness.wait_for_events(paced, lambda ev: sum(e["event"] == "status" for e in ev) == 2,
                                10, "SOURCE_DOWN for both items")
        events = harness.json_events(paced)
        for item in ITEMS:
            check_item(events, item)


if __name__ == "__main__":
    harness.run([test_trades_pass_conflation_in_order_and_counts_add_up])
