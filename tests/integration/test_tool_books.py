"""Books in the tools (docs/books.md, "Tools"): mdcast-source --books publishes
MarketByPrice books (levels around a mid price, a seeded stream of adds, size
changes and deletes) through the real distributor and servers; mdcast-client
prints each refresh's and update's entries, and the book they build -- for a
client subscribed from the start and for a late joiner on a second server, whose
image is the cached book -- equals, entry by entry, the book the source printed
at the end (--print-books). The same run captured by mdcast-capture and played
by mdcast-replay into a fresh stack gives a client there the same final books
(the images, larger than a datagram, put back together from their parts)."""
import os
import time

from harness import BIN, Stack, check, run, wait_for_log
from streams import books_of, by_item, messages, printed_books
from test_capture_replay import start_capture, stop_by_signal

# 200 levels: a refresh is about 5 kB, sent on the backbone in parts (MessagePart).
BOOKS, LEVELS = 3, 200
NAMES = [f"BOOK{i:06d}" for i in range(BOOKS)]
SOURCE_ARGS = ["--items", "2", "--books", str(BOOKS), "--book-levels", str(LEVELS), "--seed", "7",
               "--print-books"]


def check_books(client, want, label, same_seq=True):
    """The client's books equal the source's, entry by entry, at its last sequence."""
    books, seqs = books_of(messages(client))
    for name in NAMES:
        expected, last_seq = want[name]
        check(name in books, f"{label}: no book for {name}")
        if same_seq:  # a replay publishes with sequences of its own
            check(seqs.get(name) == last_seq, f"{label}: {name} ended at seq {seqs.get(name)}, source at {last_seq}")
        got = books[name]
        missing = sorted(set(expected) - set(got))
        extra = sorted(set(got) - set(expected))
        check(not missing and not extra, f"{label}: {name} levels missing {missing[:5]}, extra {extra[:5]}")
        for price, fields in expected.items():
            check(got[price] == fields, f"{label}: {name} at {price}: {got[price]}, want {fields}")


def check_stream_shape(client):
    """The stream is a book's: refreshes in price order as adds (between L/2 and L levels:
    the cached book as the source has changed it), updates of every action."""
    actions = set()
    for name, got in by_item(messages(client)).items():
        if not name.startswith("BOOK"):
            continue
        refresh = got[0]
        check(refresh["type"] == "refresh" and refresh["domain"] == "MarketByPrice", f"{name}: {refresh}")
        keys = [e["key"] for e in refresh["entries"]]
        check(LEVELS // 2 <= len(keys) <= LEVELS and all(e["action"] == "add" for e in refresh["entries"]),
              f"{name}: refresh entries {refresh['entries'][:3]}")
        check([float(k) for k in keys] == sorted(float(k) for k in keys), f"{name}: refresh out of order {keys}")
        for m in got:
            actions.update(e["action"] for e in m.get("entries", []) if m["type"] == "update")
    check(actions == {"add", "update", "delete"}, f"actions seen in updates: {actions}")


def test_source_books_reach_clients_entry_by_entry():
    with Stack("toolbooks") as stack:
        stack.distributor()
        first = stack.server(1)
        source = stack.source(*SOURCE_ARGS, "--rate", "300", "--duration", "4", stdout=True)
        wait_for_log(source, "items registered")
        wait_for_log(first, "service MDCAST (")
        full = stack.client(1, "--items", ",".join(NAMES + ["ITEM000001"]), "--duration", "60", name="full")
        time.sleep(1.5)  # the late joiner's image is the book as the caches hold it by then
        wait_for_log(stack.server(2), "service MDCAST (")
        late = stack.client(2, "--items", ",".join(NAMES), "--duration", "60", name="late")
        check(source.wait(20) == 0, "source failed")
        time.sleep(1)
        for client in (full, late):
            stop_by_signal(client)
        want = printed_books(source)
        check(sorted(want) == NAMES, f"source printed books {sorted(want)}")
        check_books(full, want, "from the start")
        check_books(late, want, "late joiner")
        check_stream_shape(full)
        items = by_item(messages(full))
        check(items["ITEM000001"][0]["domain"] == "MarketPrice" and "entries" not in items["ITEM000001"][0],
              f"a field-list item: {items['ITEM000001'][0]}")


def test_a_replayed_capture_ends_with_the_same_books():
    with Stack("toolbooks-capture") as stack:
        path = os.path.join(stack.dir, "books.pcap")
        stack.distributor()
        stack.server(1)
        capture = start_capture(stack, path)
        source = stack.source(*SOURCE_ARGS, "--rate", "300", "--duration", "2", stdout=True)
        check(source.wait(20) == 0, "source failed")
        time.sleep(0.5)
        stop_by_signal(capture)
        want = printed_books(source)
    with Stack("toolbooks-replay") as stack:
        stack.distributor()
        server = stack.server(1)
        # Fast, images first: a client subscribed before the first update sees every action.
        replay = stack.start("replay", [BIN["replay"], path, "--distributor", f"127.0.0.1:{stack.publisher_port}",
                                        "--images-first", "--start-delay", "3"], stdout=True)
        wait_for_log(server, "is up", timeout=15)
        client = stack.client(1, "--items", ",".join(NAMES), "--duration", "60")
        check(replay.wait(30) == 0, "replay failed")
        time.sleep(1)
        stop_by_signal(client)
        log = replay.log_text()
        check(f"books: {BOOKS} refreshes" in log and "0 messages in parts refused" in log,
              f"replay: the books' images (in parts) were not all replayed: {log[-1500:]}")
        check_books(client, want, "replayed", same_seq=False)


if __name__ == "__main__":
    run([test_source_books_reach_clients_entry_by_entry, test_a_replayed_capture_ends_with_the_same_books])
