"""What the book recovery tests share (test_book_failover.py, test_book_recovery.py):
sdk-book-probe publishers and consumers on a harness.Stack, and the entry-by-entry
comparison of a consumer's book with the publisher's."""
import os
import signal
import sys
from decimal import Decimal

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import check  # noqa: E402
from test_books import BOOK_BIN, first_event, wait_for  # noqa: E402,F401 - re-exported

ITEM = "VOD.MBP"


def publisher(stack, name, levels, updates, seed, rate, *extra):
    """An SDK publisher of a MarketByPrice book (sdk-book-probe publish)."""
    return stack.start(name, [BOOK_BIN, "publish", "--distributors",
                              f"127.0.0.1:{stack.publisher_port}", "--service", "BOOKS",
                              "--item", ITEM, "--levels", str(levels), "--updates", str(updates),
                              "--seed", str(seed), "--rate", str(rate), *extra], stdout=True)


def consumer(stack, instances, name, expect, *extra):
    """An SDK consumer keeping the book, on the failover list `instances` (server numbers)."""
    servers = ",".join(f"127.0.0.1:{stack.client_ports[i]}" for i in instances)
    return stack.start(name, [BOOK_BIN, "consume", "--servers", servers, "--service", "BOOKS",
                              "--item", ITEM, "--expect", str(expect), "--duration", "120", *extra],
                       stdout=True)


def events_of(process, kind):
    return [e for e in harness.json_events(process) if e["event"] == kind]


def stop(process):
    process.popen.send_signal(signal.SIGTERM)
    check(process.wait(20) == 0, f"{process.name} did not exit cleanly")


def check_same_book(name, got, want):
    """Entry by entry: each [price, size, orders] as the publisher has it, none more, none less."""
    mine, theirs = {e[0]: e for e in got}, {e[0]: e for e in want}
    stale = sorted(set(mine) - set(theirs), key=Decimal)
    missing = sorted(set(theirs) - set(mine), key=Decimal)
    check(not stale, f"{name}: {len(stale)} entries the publisher does not have, first {stale[:5]}")
    check(not missing, f"{name}: {len(missing)} of the publisher's entries missing, first {missing[:5]}")
    for key, entry in theirs.items():
        check(mine[key] == entry, f"{name}: entry {mine[key]} where the publisher has {entry}")


def check_consumer_ends_exact(process, published, updates, timeout=60):
    """The consumer printed the book at the publisher's last update while ok, exactly the
    publisher's, with no update out of order while shown ok; returns its book line."""
    book = wait_for(process, "book", timeout=timeout)
    check(book["n"] == updates and book["ok"], f"{process.name} ended at {book['n']}, ok {book['ok']}")
    check(book["jumps"] == 0, f"{process.name}: {book['jumps']} updates out of order while ok: "
          f"{events_of(process, 'jump')[:5]}")
    check_same_book(process.name, book["entries"], published["entries"])
    return book
