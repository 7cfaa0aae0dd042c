"""Books from Python (docs/books.md, docs/python.md): Publisher.refresh_book/update_book,
an event's domain and book_entries, and mdcast.Book, through the real distributor and
servers. Every consumer, subscribed from the start or joining late, ends with exactly the
publisher's book, entry by entry; so does a Python consumer of a C++ publisher's book."""
import contextlib
import os
import random
import signal
import sys
import time
from decimal import Decimal

import pytest

import mdcast
from conftest import collect, wait_for_service

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "integration"))
import harness  # noqa: E402

LEVELS, UPDATES = 1000, 3000
COUNTER = "ACVOL_1"  # summary field: the update's number


@contextlib.contextmanager
def publisher(stack, item_name):
    distributor = f"127.0.0.1:{stack.publisher_port}"
    with mdcast.Publisher(distributor) as pub:
        assert pub.wait_connected(10) == distributor
        pub.add_service("PYBOOKS")
        yield pub, pub.add_item("PYBOOKS", item_name)


LEFT_OVER = {}  # per consumer: the events read after the one that ended a follow()


def follow(consumer, book, until, timeout=60.0):
    """Applies the consumer's events to `book` until until(book, last_event) holds. The
    events read with that one are kept for the next call (dropping them lost updates)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = LEFT_OVER.pop(id(consumer), None) or list(consumer.read(0.2))
        for i, event in enumerate(events):
            book.apply(event)
            if until(book, event):
                LEFT_OVER[id(consumer)] = events[i + 1:]
                return
    raise AssertionError(f"{book} never reached the condition; summary {book.summary}")


def publish_update(pub, item, summary, changes):
    while not pub.update_book(item, summary, changes):  # the outbox is full: wait
        time.sleep(0.001)


class BookModel:
    """The publisher's own book, changed at random: adds, size updates, deletes."""

    def __init__(self, seed):
        self.random = random.Random(seed)
        self.entries = {Decimal(10000 + i) / 100: self.level() for i in range(LEVELS)}

    def level(self):
        """A level; one in four without NO_ORD, so an add that merged instead of replacing
        an entry would show."""
        level = {"ORDER_SIZE": self.random.randint(1, 1000), "NO_ORD": self.random.randint(1, 20)}
        if self.random.randint(0, 3) == 0:
            del level["NO_ORD"]
        return level

    def changes(self):
        out = []
        for _ in range(self.random.randint(1, 4)):
            action = self.random.randint(0, 2) if self.entries else 0
            if action == 0:  # a level anywhere around the book, new or replaced
                key = Decimal(self.random.randint(9000, 11000 + LEVELS)) / 100
                self.entries[key] = self.level()
                out.append(mdcast.BookEntry(key, "add", dict(self.entries[key])))
                continue
            key = self.random.choice(list(self.entries))
            if action == 1:  # the size alone, merged into the level
                size = {"ORDER_SIZE": self.random.randint(1, 1000)}
                self.entries[key].update(size)
                out.append(mdcast.BookEntry(key, "update", size))
            else:
                del self.entries[key]
                out.append((key, "delete"))
        return out


def check_same_book(name, book, entries):
    want = sorted(entries.items())
    got = list(book)
    for (key, fields), (want_key, want_fields) in zip(got, want):
        assert (key, fields) == (want_key, want_fields), f"{name}: entry {key} {fields}"
    assert len(got) == len(want), f"{name}: {len(got)} entries, the publisher {len(want)}"
    assert book.to_dict() == entries


def done(book, event):
    return book.summary.get(COUNTER) == UPDATES and event.ok


def test_every_python_subscriber_ends_with_the_publishers_book(stack):
    stack.distributor()
    stack.server(1)
    stack.server(2)
    model = BookModel(seed=7)
    with publisher(stack, "VOD.MBP") as (pub, item), \
            mdcast.Consumer(f"127.0.0.1:{stack.client_ports[1]}") as early, \
            mdcast.Consumer(f"127.0.0.1:{stack.client_ports[2]}") as late:
        assert pub.refresh_book(item, "MarketByPrice", {COUNTER: 0}, model.entries)
        assert pub.flush(30)
        early_book, late_book = mdcast.Book(), mdcast.Book()
        wait_for_service(early, "PYBOOKS")
        early.subscribe("PYBOOKS", "VOD.MBP")
        follow(early, early_book, lambda b, e: e.kind == "refresh")
        assert early_book.domain == "MarketByPrice" and len(early_book) == LEVELS
        for n in range(1, UPDATES + 1):
            if n == UPDATES // 2:
                assert pub.flush(30)
                late.subscribe("PYBOOKS", "VOD.MBP")
                follow(late, late_book, lambda b, e: e.kind == "refresh")
                # the second server's cached book, part way through the stream
                assert late_book.domain == "MarketByPrice" and late_book.summary[COUNTER] < n
            publish_update(pub, item, {COUNTER: n}, model.changes())
        assert pub.flush(30)
        for name, consumer, book in [("early", early, early_book), ("late", late, late_book)]:
            follow(consumer, book, done)
            check_same_book(name, book, model.entries)


def test_keys_actions_and_domains_as_python_values(stack):
    stack.server(1)
    stack.distributor()
    with publisher(stack, "LIST") as (pub, item), \
            mdcast.Consumer(f"127.0.0.1:{stack.client_ports[1]}") as consumer:
        with pytest.raises(ValueError, match="domain"):
            pub.refresh_book(item, "MarketPrice", {}, {})
        with pytest.raises(ValueError):  # names are not a MarketByPrice book's keys
            pub.refresh_book(item, "MarketByPrice", {}, {"VOD.L": {}})
        with pytest.raises(ValueError, match="action"):
            pub.update_book(item, {}, [("VOD.L", "replace", {})])
        assert pub.refresh_book(item, "SymbolList", {COUNTER: 0},
                                [("VOD.L", {"NO_ORD": 1}), (b"\xff\x01", {"NO_ORD": 2})])
        assert pub.flush(10)
        wait_for_service(consumer, "PYBOOKS")
        consumer.subscribe("PYBOOKS", "LIST")
        refresh = next(e for e in collect(consumer, lambda ev: any(e.kind == "refresh" for e in ev))
                       if e.kind == "refresh")
        assert refresh.domain == "SymbolList" and refresh.fields == {COUNTER: 0}
        assert refresh.book_entries == [("VOD.L", "add", {"NO_ORD": 1}),
                                        (b"\xff\x01", "add", {"NO_ORD": 2})]
        assert pub.update_book(item, {COUNTER: 1}, [
            mdcast.BookEntry("BP.L", "add", {"NO_ORD": 3}), ("VOD.L", "update", {"ORDER_SIZE": 9}),
            (b"\xff\x01", "delete")])
        update = next(e for e in collect(consumer, lambda ev: any(e.kind == "update" for e in ev))
                      if e.kind == "update")
        assert update.book_entries == [("BP.L", "add", {"NO_ORD": 3}),
                                       ("VOD.L", "update", {"ORDER_SIZE": 9}),
                                       (b"\xff\x01", "delete", {})]
        book = mdcast.Book()
        assert book.apply(refresh) and book.apply(update)
        assert book.to_dict() == {"BP.L": {"NO_ORD": 3}, "VOD.L": {"NO_ORD": 1, "ORDER_SIZE": 9}}
        assert book.find("VOD.L") == {"NO_ORD": 1, "ORDER_SIZE": 9} and book.find("X") is None
        assert book.summary == {COUNTER: 1}


def test_prices_as_decimal_int_float_and_the_dataframe(stack, monkeypatch):
    stack.server(1)
    stack.distributor()
    with publisher(stack, "MBP") as (pub, item), \
            mdcast.Consumer(f"127.0.0.1:{stack.client_ports[1]}") as consumer:
        assert pub.refresh_book(item, "MarketByPrice", {},
                                {Decimal("101.25"): {"ORDER_SIZE": 5}, 100: {"ORDER_SIZE": 7},
                                 99.5: {"NO_ORD": 2}})
        assert pub.flush(10)
        wait_for_service(consumer, "PYBOOKS")
        consumer.subscribe("PYBOOKS", "MBP")
        book = mdcast.Book()
        follow(consumer, book, lambda b, e: e.kind == "refresh", timeout=10)
        assert [key for key, _ in book] == [Decimal("99.5"), Decimal(100), Decimal("101.25")]
        assert all(isinstance(key, Decimal) for key in book.keys())
        assert [str(key) for key in book.keys()] == ["99.5", "100", "101.25"]  # as written
        assert [key for key, _ in reversed(book)][0] == Decimal("101.25")  # the best bid first
        assert book.find(101.25) == {"ORDER_SIZE": 5} and book.find(100) == {"ORDER_SIZE": 7}
        assert book.find(Decimal("99.50")) == {"NO_ORD": 2}
        with monkeypatch.context() as without_pandas:
            without_pandas.setitem(sys.modules, "pandas", None)  # import pandas fails
            with pytest.raises(ImportError, match="to_dataframe needs pandas"):
                book.to_dataframe()
        try:
            import pandas  # noqa: F401
        except ImportError:
            pytest.skip("pandas is not installed (python3-pandas): the DataFrame is not checked")
        frame = book.to_dataframe()
        assert list(frame.index) == book.keys() and list(frame.columns) == ["NO_ORD", "ORDER_SIZE"]
        assert frame.loc[Decimal("101.25"), "ORDER_SIZE"] == 5


def test_a_cpp_publishers_book_in_python(stack):
    """sdk-book-probe (the C++ SDK) publishes; mdcast.Book in Python ends with its book."""
    stack.distributor()
    stack.server(1)
    updates = 1000
    probe = stack.start("cpp-publisher", [
        os.environ.get("MDCAST_SDK_BOOK", "sdk-book-probe"), "publish", "--distributors",
        f"127.0.0.1:{stack.publisher_port}", "--service", "BOOKS", "--item", "VOD.MBP",
        "--levels", str(LEVELS), "--updates", str(updates), "--seed", "3", "--rate", "2000"],
        stdout=True)
    try:
        # Subscribed before the probe's item exists, the item would be closed as not found.
        harness.wait_for_events(probe, lambda ev: any(e["event"] == "refreshed" for e in ev), 60,
                                "'refreshed' line")
        with mdcast.Consumer(f"127.0.0.1:{stack.client_ports[1]}") as consumer:
            wait_for_service(consumer, "BOOKS")
            consumer.subscribe("BOOKS", "VOD.MBP")
            book = mdcast.Book()
            follow(consumer, book, lambda b, e: b.summary.get(COUNTER) == updates and e.ok)
        published = next(e for e in harness.wait_for_events(
            probe, lambda ev: any(e["event"] == "book" for e in ev), 60, "'book' line")
            if e["event"] == "book")
        # [price, size (field 3427), orders (NO_ORD)] as the probe prints them
        got = [[key, fields.get(3427, -1), fields.get("NO_ORD", -1)] for key, fields in book]
        want = [[Decimal(price), size, orders] for price, size, orders in published["entries"]]
        assert got == want
    finally:
        probe.popen.send_signal(signal.SIGTERM)
        probe.wait(20)
