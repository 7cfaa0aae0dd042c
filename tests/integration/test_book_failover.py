"""Books across failover, late join and a slow reader (issue 32, "Done when";
docs/books.md, "Recovery"): an SDK publisher (sdk-book-probe) refreshes a
MarketByPrice book of 1,000 levels and streams adds, size updates and deletes
through the real distributor to two servers. Clients: one SDK consumer on
server 2 from the start; one SDK consumer whose failover list is both servers,
on server 1 until it is killed -9 mid-stream (it goes suspect, moves to server
2 and is re-imaged there); one joining server 2 late, half way; one raw client
on server 2 (output.slow_consumer_policy: conflate, small buffers) that stalls
until the server conflates it and then reads slowly; and an SDK consumer on
server 2 whose handler stalls for 5 s (the SDK stops reading, the server
conflates it: a book's actions are held and sent in order). Each ends with exactly the
publisher's book, entry by entry, and no SDK consumer ever applied an update out
of order while its book was shown ok (the probe counts such "jumps").
"""
import os
import sys
import threading
import time
from decimal import Decimal

sys.path.insert(0, os.path.dirname(__file__))
import book_stack  # noqa: E402
import harness  # noqa: E402
from book_stack import check_consumer_ends_exact, events_of, stop, wait_for  # noqa: E402
from harness import check, wait_for_log  # noqa: E402
from test_books import CONFLATE, book_of_frames, stuck_book_subscriber  # noqa: E402
from wire import read_until_quiet  # noqa: E402

LEVELS, UPDATES = 1000, 4000


class SlowReader:
    """A raw subscriber on a thread: reads nothing until the server logs that it conflates
    it, then reads like a slow client while the publisher publishes, then until quiet."""

    def __init__(self, port, server, publisher):
        self.socket = stuck_book_subscriber(port)
        self.frames, self.error = [], None
        self.server, self.publisher = server, publisher
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self):
        try:
            # Its own conflation (login_frame's user), not the stalled SDK consumer's.
            wait_for_log(self.server, "user=tester is a slow consumer: conflating", 30)
            publishing = lambda: not book_stack.first_event(  # noqa: E731
                harness.json_events(self.publisher), "done")
            self.frames = read_until_quiet(self.socket, 2.0, 90, slow_while=publishing)
        except Exception as error:  # noqa: BLE001 - reported by book()
            self.error = error

    def book(self):
        """The book the frames build: {price: {field id: value}}; book updates never conflated."""
        self.thread.join(100)
        check(self.error is None and not self.thread.is_alive(), f"slow reader: {self.error}")
        book, actions = book_of_frames(self.frames)
        check(actions > 0, "no book update reached the slow reader")
        return book


def check_failed_over(process, first_port, second_port):
    """Up on the first server, down, up on the second; a suspect status after the loss and a
    fresh image after it."""
    ups = [e["server"] for e in events_of(process, "connection") if e["state"] == "up"]
    check(ups == [f"127.0.0.1:{first_port}", f"127.0.0.1:{second_port}"], f"connections up: {ups}")
    item = [e for e in harness.json_events(process) if e["event"] in ("refresh", "status")]
    suspect = [i for i, e in enumerate(item) if e["event"] == "status" and e["data"] == "suspect"]
    check(suspect, f"{process.name}: no suspect status after the kill: {item}")
    check(any(e["event"] == "refresh" and e["ok"] for e in item[suspect[0]:]),
          f"{process.name}: no fresh image after the suspect status: {item}")


def test_failover_late_join_and_slow_reader_end_with_the_book():
    with harness.Stack("book-failover") as stack:
        stack.distributor()
        doomed = stack.server(1)
        survivor = stack.server(2, extra=CONFLATE)
        go, half_go = os.path.join(stack.dir, "go"), os.path.join(stack.dir, "half-go")
        publisher = book_stack.publisher(stack, "publisher", LEVELS, UPDATES, 21, 1000,
                                         "--go-file", go, "--half-go-file", half_go)
        check(wait_for(publisher, "refreshed")["flushed"], "the book refresh was not flushed")
        early = book_stack.consumer(stack, [2], "early", UPDATES)
        moving = book_stack.consumer(stack, [1, 2], "failover", UPDATES)
        for process in (early, moving):
            check(wait_for(process, "refresh")["entries"] == LEVELS, f"{process.name}: image")
        slow = SlowReader(stack.client_ports[2], survivor, publisher)
        stalled = book_stack.consumer(stack, [2], "stalled", UPDATES, "--stall-at", "200",
                                      "--stall-ms", "5000")
        check(wait_for(stalled, "refresh")["entries"] == LEVELS, "stalled: image")
        open(go, "w").close()

        time.sleep(1.0)  # mid-stream: about a quarter of the updates published
        doomed.popen.kill()
        doomed.popen.wait()
        wait_for(publisher, "half")
        late = book_stack.consumer(stack, [2], "late", UPDATES)
        joined = wait_for(late, "refresh")
        check(0 < joined["n"] <= UPDATES // 2 and joined["ok"], f"late joined at {joined}")
        open(half_go, "w").close()

        published = wait_for(publisher, "book", timeout=120)
        check(wait_for(publisher, "done")["flushed"], "the publisher's updates were not flushed")
        for process in (early, moving, late, stalled):
            check_consumer_ends_exact(process, published, UPDATES)
        check(events_of(stalled, "stall"), "the stalled consumer never stalled")
        wait_for_log(survivor, "user=mdcast is a slow consumer: conflating", 10)
        check_failed_over(moving, stack.client_ports[1], stack.client_ports[2])
        want = {Decimal(p): {3427: size, 3430: orders} for p, size, orders in published["entries"]}
        got = slow.book()
        check(sorted(got) == sorted(want), f"slow reader: {len(got)} entries, publisher {len(want)}")
        for key in want:
            check(got[key] == want[key], f"slow reader at {key}: {got[key]}, publisher {want[key]}")
        for process in (early, moving, late, stalled, publisher):
            stop(process)


if __name__ == "__main__":
    harness.run([test_failover_late_join_and_slow_reader_end_with_the_book])
