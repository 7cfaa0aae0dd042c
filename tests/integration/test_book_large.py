"""The largest book the caches take by default (docs/books.md, "Large refreshes"): a
MarketByPrice book of 10,000 levels less a margin -- registry.max_book_entries and
cache.max_book_entries are 10,000 -- whose refresh (about 290 KB) is one frame from the
publisher (within publishers.max_frame_bytes, 1 MiB by default), crosses the backbone in parts
(MessagePart; within backbone.max_message_bytes, 512 KiB by default) and reaches SDK consumers as one
Refresh frame (within the SDK's max_frame_bytes, 1 MiB). One consumer subscribed from the start and one
joining late (its image is the server's cached book part way, on the other server) each end
with exactly the publisher's book, entry by entry, after a stream of adds, size updates and
deletes.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import check  # noqa: E402
from test_books import check_ends_with, consumer, start_publisher, stop, wait_for  # noqa: E402

# 50 short of the limit: the stream adds levels as well as deleting them.
LEVELS, UPDATES = 9950, 400


def test_the_largest_book_reaches_every_subscriber_whole():
    with harness.Stack("book-large") as stack:
        publisher, go, half_go = start_publisher(stack, 3, levels=LEVELS, updates=UPDATES)
        early = consumer(stack, 1, "early", expect=UPDATES)
        image = wait_for(early, "refresh")
        check(image["entries"] == LEVELS, f"early image: {image}")
        open(go, "w").close()

        wait_for(publisher, "half")
        late = consumer(stack, 2, "late", expect=UPDATES)
        joined = wait_for(late, "refresh")
        check(joined["entries"] > LEVELS // 2, f"late image: {joined}")
        open(half_go, "w").close()

        published = wait_for(publisher, "book", timeout=120)
        check(wait_for(publisher, "done")["flushed"], "the publisher's updates were not flushed")
        want = published["entries"]
        check(len(want) > LEVELS // 2, f"the publisher's book has {len(want)} entries")
        for process in [early, late]:
            check_ends_with(process, want, UPDATES)
        for process in [early, late, publisher]:
            stop(process)


if __name__ == "__main__":
    harness.run([test_the_largest_book_reaches_every_subscriber_whole])
