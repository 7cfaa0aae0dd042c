"""Books recovered (issue 32, item 4; docs/books.md, "Recovery"): a MarketByPrice
book of 1,000 levels from an SDK publisher (sdk-book-probe) with a stream of adds,
size updates and deletes, followed by SDK consumers keeping an mdcast::Book.
- Backbone loss that is repaired (NAKs, retransmission): every consumer ends with
  exactly the publisher's book, entry by entry, never suspect.
- Loss that cannot be repaired (a retransmit window far too small): the consumer
  is told (suspect UNRECOVERABLE_LOSS), re-imaged, and ends with exactly the
  publisher's book.
- The publisher killed -9 mid-stream: the consumers (and one joining meanwhile) get
  a suspect status and no image shown ok while it is away; it restarts with a new,
  smaller book, and they end with exactly that book: no entry of the old one left
  (nor in the server's cache: a subscriber joining afterwards gets the same).
- The distributor killed -9: a suspect status once the backbone is silent, nothing
  shown ok while it is down; restarted, the publisher's book re-images the consumer.
Throughout, no consumer applies an update out of order while it shows the book ok
(the probe counts such "jumps").
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import book_stack  # noqa: E402
import harness  # noqa: E402
from book_stack import check_consumer_ends_exact, events_of, stop, wait_for  # noqa: E402
from harness import admin_port, check, metric  # noqa: E402

LEVELS, UPDATES = 1000, 3000
ADMIN = "admin:\n  port: 0\n"


def stream_book(stack, servers, seed, levels=LEVELS, updates=UPDATES):
    """Publishes a book and its updates to a consumer on each of `servers` subscribed before
    the first update; returns the publisher's final book line and the consumers (running)."""
    go = os.path.join(stack.dir, "go")
    publisher = book_stack.publisher(stack, "publisher", levels, updates, seed, 1500, "--go-file", go)
    check(wait_for(publisher, "refreshed")["flushed"], "the book refresh was not flushed")
    consumers = [book_stack.consumer(stack, [n], f"consumer{n}", updates) for n in servers]
    for process in consumers:
        check(wait_for(process, "refresh")["entries"] == levels, f"{process.name}: no image")
    open(go, "w").close()
    published = wait_for(publisher, "book", timeout=90)
    check(wait_for(publisher, "done")["flushed"], "the publisher's updates were not flushed")
    return publisher, published, consumers


def statuses(process):
    return [(e["code"], e["data"]) for e in events_of(process, "status")]


def test_repaired_backbone_loss_leaves_the_book_exact():
    loss = "testing:\n  loss:\n    receive_rate: 0.05\n    control_send_rate: 0.05\n    seed: 5\n"
    with harness.Stack("book-loss") as stack:
        stack.distributor()
        lossy = stack.server(1, extra=ADMIN + loss)
        stack.server(2)
        publisher, published, consumers = stream_book(stack, [1, 2], 41)
        for process in consumers:
            check_consumer_ends_exact(process, published, UPDATES)
            check(not statuses(process), f"{process.name}: statuses {statuses(process)}")
        port = admin_port(lossy)
        check(metric(port, "mdcast_server_repaired_total") > 0, "nothing repaired")
        check(metric(port, "mdcast_server_unrecoverable_total") == 0, "unrecoverable loss")
        for process in [*consumers, publisher]:
            stop(process)


def test_unrecoverable_loss_is_told_and_the_book_reimaged():
    starved = "  retransmit_window_bytes: 65536\n  repair_horizon_ms: 10\n" \
              "  retransmit_rate_bytes_per_s: 1\n"
    # Bursts at fixed intervals: loss however few packets a loaded machine batches the stream into.
    loss = "testing:\n  loss:\n    receive_burst_every: 150\n    receive_burst_length: 10\n    seed: 17\n"
    with harness.Stack("book-unrecoverable") as stack:
        stack.distributor(extra=starved)
        lossy = stack.server(1, extra=ADMIN + loss)
        publisher, published, consumers = stream_book(stack, [1], 43)
        consumer = consumers[0]
        book = check_consumer_ends_exact(consumer, published, UPDATES)
        told = [s for s in statuses(consumer) if s == ("UNRECOVERABLE_LOSS", "suspect")]
        check(told, f"no suspect UNRECOVERABLE_LOSS status: {statuses(consumer)}")
        check(book["refreshes"] > 1, "the book was never re-imaged after the loss")
        port = admin_port(lossy)
        check(metric(port, "mdcast_server_unrecoverable_total") > 0,
              "no unrecoverable loss: the test exercised nothing")
        for process in (consumer, publisher):
            stop(process)


def item_events(process):
    return [e for e in harness.json_events(process) if e["event"] in ("refresh", "status")]


def check_new_book_first_shown_ok(process, levels):
    """After the source went away, the first image shown ok is the new source's whole book
    (before its first update); images before it (the old book) were all suspect."""
    seen = item_events(process)
    down = next(i for i, e in enumerate(seen) if e["event"] == "status")
    fresh = [e for e in seen[down:] if e["event"] == "refresh" and e["ok"]]
    check(fresh and fresh[0]["entries"] == levels and fresh[0]["n"] == 0,
          f"{process.name}: the first image shown ok after the restart is not the new book: "
          f"{fresh[:1]}")


def test_a_restarted_source_replaces_the_book_with_no_stale_entry():
    with harness.Stack("book-restart") as stack:
        stack.distributor()
        stack.server(1)
        stack.server(2)
        go = os.path.join(stack.dir, "go")
        # The first run can never reach update 2,500: the consumers print the book at the
        # second run's last update, and only that one.
        first = book_stack.publisher(stack, "first", LEVELS, 2400, 51, 500, "--go-file", go)
        wait_for(first, "refreshed")
        consumers = [book_stack.consumer(stack, [n], f"consumer{n}", 2500) for n in (1, 2)]
        for process in consumers:
            wait_for(process, "refresh")
        open(go, "w").close()
        time.sleep(1.0)  # mid-stream
        first.popen.kill()
        first.popen.wait()
        for process in consumers:
            harness.wait_for_events(process, lambda ev: any(
                e["event"] == "status" and e["data"] == "suspect" for e in ev), 20,
                "suspect status after the source was killed")
        # A subscriber joining while the source is away is never shown the old book as ok.
        away = book_stack.consumer(stack, [1], "away", 2500)
        harness.wait_for_events(away, lambda ev: any(e["event"] in ("refresh", "status") for e in ev),
                                20, "an image or status for the late joiner")
        time.sleep(0.5)  # the book stays suspect while the source is away
        for process in [*consumers, away]:
            check(not any(e["event"] == "refresh" and e["ok"] for e in item_events(process)[-1:]),
                  f"{process.name}: shown ok while the source is away: {item_events(process)[-3:]}")
        check(not any(e["event"] == "refresh" and e["ok"] for e in item_events(away)),
              f"away: the old book shown ok: {item_events(away)}")
        second = book_stack.publisher(stack, "second", LEVELS // 2, 2500, 52, 1500)
        published = wait_for(second, "book", timeout=90)
        check(wait_for(second, "done")["flushed"], "the second run's updates were not flushed")
        after = book_stack.consumer(stack, [2], "after", 2500)  # its image: the server's cache
        for process in [*consumers, away, after]:
            check_consumer_ends_exact(process, published, 2500)
        for process in [*consumers, away]:
            check_new_book_first_shown_ok(process, LEVELS // 2)
        for process in [*consumers, away, after, second]:
            stop(process)


def test_a_distributor_down_is_told_and_its_restart_reimages_the_book():
    with harness.Stack("book-distributor") as stack:
        distributor = stack.distributor()
        stack.server(1, extra="  source_silent_ms: 1000\n")
        go = os.path.join(stack.dir, "go")
        publisher = book_stack.publisher(stack, "publisher", LEVELS, UPDATES, 61, 1000,
                                         "--go-file", go)
        wait_for(publisher, "refreshed")
        consumer = book_stack.consumer(stack, [1], "consumer", UPDATES)
        wait_for(consumer, "refresh")
        open(go, "w").close()
        time.sleep(1.0)  # mid-stream
        distributor.popen.kill()
        distributor.popen.wait()
        os.rename(distributor.log_path, distributor.log_path + ".killed")  # kept for a failure
        # While it is down the book cannot be recovered: the consumer is told, and stays told.
        harness.wait_for_events(consumer, lambda ev: any(
            e["event"] == "status" and e["data"] == "suspect" for e in ev), 20,
            "a suspect status while the distributor is down")
        time.sleep(0.5)
        last = item_events(consumer)[-1]
        check(last["event"] == "status" and last["data"] == "suspect",
              f"shown {last} while the distributor is down")
        stack.distributor()  # a new epoch: the publisher sends its book again
        published = wait_for(publisher, "book", timeout=90)
        check(wait_for(publisher, "done")["flushed"], "the publisher's updates were not flushed")
        book = check_consumer_ends_exact(consumer, published, UPDATES)
        check(book["refreshes"] > 1, f"no fresh image after the restart: {statuses(consumer)}")
        for process in (consumer, publisher):
            stop(process)


if __name__ == "__main__":
    harness.run([test_repaired_backbone_loss_leaves_the_book_exact,
                 test_unrecoverable_loss_is_told_and_the_book_reimaged,
                 test_a_restarted_source_replaces_the_book_with_no_stale_entry,
                 test_a_distributor_down_is_told_and_its_restart_reimages_the_book])
