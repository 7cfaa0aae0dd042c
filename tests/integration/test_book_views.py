"""Views inside a book's entries (docs/books.md, "Views"): an SDK publisher
(sdk-book-probe) refreshes a MarketByPrice book of 1,000 levels (each level with a
size, 3427, and a number of orders, 3430) and publishes a stream of adds, size
updates and deletes. Subscribers with a view of the orders alone -- SDK consumers
keeping an mdcast::Book from the start and joining late, and a raw client that
checks every frame -- each end with exactly the publisher's book restricted to the
view: every level there, none left over, no size anywhere. The raw client's view
also leaves out the summary (the update number), so an update that only changed
sizes leaves it nothing and is not sent to it at all.
"""
import os
import socket
import sys
import threading
from decimal import Decimal

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import SUBSCRIBE, check, frame, login_frame  # noqa: E402
from test_books import (LEVELS, UPDATES, book_of_frames, check_ends_with, consumer,  # noqa: E402
                        entry_of, start_publisher, stop, wait_for)
from wire import REFRESH, UPDATE, fields, first, read_until_quiet  # noqa: E402

ORDERS, NUMBER = 3430, 32  # the view: the number of orders and the update number
VIEW = ("--view", f"{ORDERS},{NUMBER}")


def viewed_subscriber(port):
    """Logs in and subscribes to the book with a view of the number of orders alone."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    view = bytes([0x28]) + bytes([ORDERS & 0x7F | 0x80, ORDERS >> 7])  # view_field_ids = 5
    s.sendall(login_frame() + frame(SUBSCRIBE, b"\x12\x05BOOKS\x1a\x07VOD.MBP" + view))
    return s


def read_in_background(sock, done):
    """Reads every frame from `sock` on a thread (so the server never finds it slow) until it
    has been quiet for 2 s once `done` is set; the frames land in the returned list."""
    frames = []
    thread = threading.Thread(target=lambda: frames.extend(
        read_until_quiet(sock, 2.0, 180, ready=done.is_set)), daemon=True)
    thread.start()
    return thread, frames


def check_frames_in_view(frames):
    """No field but the number of orders anywhere; no update frame left empty by the view."""
    for kind, body in frames:
        if kind not in (REFRESH, UPDATE):
            continue
        f = fields(body)
        summary = fields(first(f, 4 if kind == UPDATE else 9, b"")).get(1, [])
        check(all(first(fields(v), 1) == ORDERS for v in summary), "a summary field out of view")
        encoded = first(f, 9 if kind == UPDATE else 11, b"")
        for entry in fields(encoded).get(1, []):
            key, action, values = entry_of(entry)
            check(set(values) <= {ORDERS}, f"fields {sorted(values)} at {key} (action {action})")
        if kind == UPDATE:
            check(summary or encoded, f"an empty update {first(f, 2)} was sent")


def test_viewed_subscribers_end_with_the_book_in_their_view():
    with harness.Stack("book-views") as stack:
        publisher, go, half_go = start_publisher(stack, 5)
        early = consumer(stack, 1, "early", *VIEW)
        check(wait_for(early, "refresh")["entries"] == LEVELS, "early image")
        raw, published_all = viewed_subscriber(stack.client_ports[2]), threading.Event()
        reader, frames = read_in_background(raw, published_all)
        open(go, "w").close()

        wait_for(publisher, "half")
        late = [consumer(stack, 1, "late1", *VIEW), consumer(stack, 2, "late2", *VIEW)]
        for process in late:
            wait_for(process, "refresh")
        open(half_go, "w").close()

        published = wait_for(publisher, "book", timeout=120)
        check(wait_for(publisher, "done")["flushed"], "the publisher's updates were not flushed")
        published_all.set()
        want = [[price, -1, orders] for price, _size, orders in published["entries"]]
        check(want, "the publisher's book is empty")
        for process in [early, *late]:
            check_ends_with(process, want)

        reader.join(200)
        check(not reader.is_alive(), "the raw client's reader did not finish")
        check_frames_in_view(frames)
        book, updates = book_of_frames(frames)
        check(sorted(book) == sorted(Decimal(p) for p, _, _ in want), "the raw client's levels")
        for price, _, orders in want:
            check(book[Decimal(price)] == {ORDERS: orders}, f"raw client at {price}: "
                  f"{book[Decimal(price)]} where the publisher has {orders} orders")
        # Updates of sizes alone (about one in eight) leave the raw client nothing. (A re-image
        # after loss the backbone could not repair would only add a refresh: still the book.)
        check(0 < updates < UPDATES, f"{updates} book updates of {UPDATES} reached the raw client")
        raw.close()
        for process in [early, *late, publisher]:
            stop(process)


if __name__ == "__main__":
    harness.run([test_viewed_subscribers_end_with_the_book_in_their_view])
