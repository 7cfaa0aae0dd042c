"""Books end to end (docs/books.md): an SDK publisher (sdk-book-probe) refreshes a
MarketByPrice book of 1,000 levels and publishes a stream of book updates (adds,
size updates, deletes) through the real distributor and two servers. SDK
consumers keeping an mdcast::Book -- one subscribed from the start, late joiners
on both servers (their image is the cached book half way), and one conflating
(conflate_ms: a book's actions are never merged, so no delete is lost) -- each
end with exactly the publisher's book, checked entry by entry.
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import check  # noqa: E402

BOOK_BIN = os.environ.get("MDCAST_SDK_BOOK", "sdk-book-probe")
LEVELS, UPDATES = 1000, 3000


def book_probe(stack, name, *args):
    return stack.start(name, [BOOK_BIN, *args], stdout=True)


def consumer(stack, instance, name, *extra):
    return book_probe(stack, name, "consume", "--servers",
                      f"127.0.0.1:{stack.client_ports[instance]}", "--service", "BOOKS",
                      "--item", "VOD.MBP", "--expect", str(UPDATES), "--duration", "200", *extra)


def first(events, kind):
    found = [e for e in events if e["event"] == kind]
    return found[0] if found else None


def wait_for(process, kind, timeout=60):
    return first(harness.wait_for_events(process, lambda ev: first(ev, kind) is not None,
                                         timeout, f"'{kind}' line"), kind)


def stop(process):
    process.popen.send_signal(signal.SIGTERM)
    check(process.wait(20) == 0, f"{process.name} did not exit cleanly")


def test_every_subscriber_ends_with_the_publishers_book():
    with harness.Stack("books") as stack:
        stack.distributor()
        stack.server(1)
        stack.server(2)
        go, half_go = stack.write("go", ""), os.path.join(stack.dir, "half-go")
        os.remove(go)
        publisher = book_probe(stack, "publisher", "publish", "--distributors",
                               f"127.0.0.1:{stack.publisher_port}", "--service", "BOOKS",
                               "--item", "VOD.MBP", "--levels", str(LEVELS), "--updates",
                               str(UPDATES), "--seed", "7", "--rate", "1500", "--go-file", go,
                               "--half-go-file", half_go)
        check(wait_for(publisher, "refreshed")["flushed"], "the book refresh was not flushed")

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
            book = wait_for(process, "book", timeout=120)
            check(book["n"] == UPDATES, f"{process.name} ended at update {book['n']}")
            got, want = book["entries"], published["entries"]
            for mine, theirs in zip(got, want):
                check(mine == theirs, f"{process.name}: entry {mine} where the publisher has {theirs}")
            check(len(got) == len(want), f"{process.name}: {len(got)} entries, publisher {len(want)}")
        for process in [early, *late, publisher]:
            stop(process)


if __name__ == "__main__":
    harness.run([test_every_subscriber_ends_with_the_publishers_book])
