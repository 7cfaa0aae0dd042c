"""Books end to end (docs/books.md): an SDK publisher (sdk-book-probe) refreshes a
MarketByPrice book of 1,000 levels and publishes a stream of book updates (adds,
size updates, deletes) through the real distributor and two servers. SDK
consumers keeping an mdcast::Book -- one subscribed from the start, late joiners
on both servers (their image is the cached book half way), and one conflating
(conflate_ms: a book's actions are never merged, so no delete is lost) -- each
end with exactly the publisher's book, checked entry by entry. A raw client too
slow for the stream, under output.slow_consumer_policy: conflate, gets every book
action (held and sent in order, like trades) and ends with the publisher's book.
"""
import os
import signal
import socket
import sys
from decimal import Decimal

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import SUBSCRIBE, check, frame, login_frame, wait_for_log  # noqa: E402
from wire import CLOSE, REFRESH, UPDATE, fields, first, read_until_quiet  # noqa: E402

BOOK_BIN = os.environ.get("MDCAST_SDK_BOOK", "sdk-book-probe")
LEVELS, UPDATES = 1000, 3000


def book_probe(stack, name, *args):
    return stack.start(name, [BOOK_BIN, *args], stdout=True)


def consumer(stack, instance, name, *extra, expect=UPDATES):
    return book_probe(stack, name, "consume", "--servers",
                      f"127.0.0.1:{stack.client_ports[instance]}", "--service", "BOOKS",
                      "--item", "VOD.MBP", "--expect", str(expect), "--duration", "200", *extra)


def first_event(events, kind):
    found = [e for e in events if e["event"] == kind]
    return found[0] if found else None


def wait_for(process, kind, timeout=60):
    return first_event(harness.wait_for_events(process, lambda ev: first_event(ev, kind) is not None,
                                               timeout, f"'{kind}' line"), kind)


def stop(process):
    process.popen.send_signal(signal.SIGTERM)
    check(process.wait(20) == 0, f"{process.name} did not exit cleanly")


def start_publisher(stack, seed, levels=LEVELS, updates=UPDATES, distributor={}, server=""):
    """A distributor, two servers (with those config lines) and the book's publisher,
    refreshed; it publishes its updates once `go` exists, pausing half way until `half_go`
    does."""
    stack.distributor(**distributor)
    stack.server(1, extra=server)
    stack.server(2, extra=server)
    go, half_go = stack.write("go", ""), os.path.join(stack.dir, "half-go")
    os.remove(go)
    publisher = book_probe(stack, "publisher", "publish", "--distributors",
                           f"127.0.0.1:{stack.publisher_port}", "--service", "BOOKS",
                           "--item", "VOD.MBP", "--levels", str(levels), "--updates",
                           str(updates), "--seed", str(seed), "--rate", "1500", "--go-file", go,
                           "--half-go-file", half_go)
    check(wait_for(publisher, "refreshed")["flushed"], "the book refresh was not flushed")
    return publisher, go, half_go


def check_ends_with(process, want, updates=UPDATES):
    """The consumer `process` printed its book at update `updates` and it is `want`, entry by
    entry (as the publisher printed it)."""
    book = wait_for(process, "book", timeout=120)
    check(book["n"] == updates, f"{process.name} ended at update {book['n']}")
    check(book.get("jumps", 0) == 0, f"{process.name} applied updates out of order: {book}")
    got = book["entries"]
    for mine, theirs in zip(got, want):
        check(mine == theirs, f"{process.name}: entry {mine} where the publisher has {theirs}")
    check(len(got) == len(want), f"{process.name}: {len(got)} entries, publisher {len(want)}")


def test_every_subscriber_ends_with_the_publishers_book():
    with harness.Stack("books") as stack:
        publisher, go, half_go = start_publisher(stack, 7)

        early = consumer(stack, 1, "early")
        image = wait_for(early, "refresh")
        check(image["entries"] == LEVELS and image["domain"] == "MarketByPrice",
              f"early image: {image}")
        open(go, "w").close()

        wait_for(publisher, "half")
        late = [consumer(stack, 1, "late1"), consumer(stack, 2, "late2"),
                consumer(stack, 2, "conflating", "--conflate-ms", "200")]
        for process in late:
            joined = wait_for(process, "refresh")
            # The image is the cache's book part way (the server may not have applied the very
            # last updates before the pause yet: those then come as updates).
            check(0 < joined["n"] <= UPDATES // 2, f"{process.name} joined at {joined}")
        open(half_go, "w").close()

        published = wait_for(publisher, "book", timeout=120)
        check(wait_for(publisher, "done")["flushed"], "the publisher's updates were not flushed")
        check(published["entries"], "the publisher's book is empty")
        for process in [early, *late]:
            check_ends_with(process, published["entries"])
        for process in [early, *late, publisher]:
            stop(process)


# ---- a raw slow client under output.slow_consumer_policy: conflate ---------------------------

CONFLATE = "output:\n  slow_consumer_policy: conflate\n  max_bytes: 65536\n" \
           "  guaranteed_bytes: 16384\n  tcp_send_buffer_bytes: 8192\n  max_held_trades: 100000"


def unzigzag(value):
    return (value >> 1) ^ -(value & 1)


def entry_of(body):
    """(key, action, {field id: integer}) of one encoded MapEntry."""
    f = fields(body)
    if 1 in f:
        price = fields(first(f, 1, b""))
        key = Decimal(unzigzag(first(price, 1))).scaleb(unzigzag(first(price, 2)))
    else:
        key = first(f, 2, b"").decode()
    values = {}
    for value in fields(first(f, 4, b"")).get(1, []):
        v = fields(value)
        values[first(v, 1)] = unzigzag(first(v, 2))
    return key, first(f, 3), values


def apply_map(book, encoded):
    for body in fields(encoded).get(1, []):
        key, action, values = entry_of(body)
        if action == 3:
            book.pop(key, None)
        elif action == 1:
            book[key] = values
        else:
            book.setdefault(key, {}).update(values)


def book_of_frames(frames):
    """The book a raw subscriber's frames build ({price: {field id: value}}) and the number
    of book updates among them; a book update conflated fails the test."""
    book, actions = {}, 0
    for kind, body in frames:
        f = fields(body)
        if kind == REFRESH:
            book = {}
            apply_map(book, first(f, 11, b""))
        elif kind == UPDATE and 9 in f:
            check(first(f, 5) == 0, f"book update {first(f, 2)} conflated")
            apply_map(book, first(f, 9))
            actions += 1
    return book, actions


def stuck_book_subscriber(port):
    """Logs in and subscribes to the book, reading nothing for now (a small receive buffer)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    s.sendall(login_frame() + frame(SUBSCRIBE, b"\x12\x05BOOKS\x1a\x07VOD.MBP"))
    return s


def test_a_slow_consumer_under_conflation_loses_no_action():
    with harness.Stack("books-slow") as stack:
        stack.distributor()
        server = stack.server(1, extra=CONFLATE)
        go = os.path.join(stack.dir, "go")
        publisher = book_probe(stack, "publisher", "publish", "--distributors",
                               f"127.0.0.1:{stack.publisher_port}", "--service", "BOOKS",
                               "--item", "VOD.MBP", "--levels", str(LEVELS), "--updates", "6000",
                               "--seed", "11", "--rate", "3000", "--go-file", go)
        wait_for(publisher, "refreshed")
        slow = stuck_book_subscriber(stack.client_ports[1])
        open(go, "w").close()
        wait_for_log(server, "conflating", 30)
        publishing = lambda: first_event(harness.json_events(publisher), "done") is None  # noqa: E731
        frames = read_until_quiet(slow, 2.0, 90, slow_while=publishing)
        check(all(kind != CLOSE for kind, _ in frames), "the slow client was disconnected")
        book, actions = book_of_frames(frames)
        published = wait_for(publisher, "book")
        want = {Decimal(price): {3427: size, 3430: orders}
                for price, size, orders in published["entries"]}
        check(actions > 0, "no book update reached the slow client")
        check(sorted(book) == sorted(want), f"keys differ: {len(book)} vs {len(want)} entries")
        for key in want:
            check(book[key] == want[key], f"at {key}: {book[key]} where the publisher has {want[key]}")
        stop(publisher)


if __name__ == "__main__":
    harness.run([test_every_subscriber_ends_with_the_publishers_book,
                 test_a_slow_consumer_under_conflation_loses_no_action])
