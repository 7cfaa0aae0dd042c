"""Trade-safe slow-consumer conflation end to end (output.slow_consumer_policy:
conflate): mdcast-source publishes 5,000 updates/s over 10 items and marks every
7th update of each item a trade (--trade-every 7); a raw client subscribed to
them stops reading, so the server conflates for it, then reads slowly. Every
trade published after its image reaches it, marked, on its own, in order, with
its own values; quotes are conflated (some updates standing for more than one,
with their span) and the counts add up: the conflated updates' stands_for plus
one per update sent as published equals the updates published."""
from harness import Stack, check, run, stuck_subscriber, wait_for_log
from streams import final_seq, sent_updates
from wire import CLOSE, REFRESH, UPDATE, fields, first, read_until_quiet

ITEMS = 10
TRADE_EVERY = 7
ACVOL_1 = 32  # the source sets it to 10 x the update's sequence
CONFLATE = "output:\n  slow_consumer_policy: conflate\n  max_bytes: 65536\n" \
           "  guaranteed_bytes: 16384\n  tcp_send_buffer_bytes: 8192"


def unzigzag(value):
    return (value >> 1) ^ -(value & 1)


def acvol(update_fields):
    """ACVOL_1 of an Update's field list (None when it has none)."""
    for entry in fields(first(update_fields, 4, b"")).get(1, []):
        f = fields(entry)
        if first(f, 1) == ACVOL_1 and 2 in f:
            return unzigzag(first(f, 2))
    return None


class Stream:
    """One item as received: its first image's sequence, the updates after it, and
    the last sequence of all (a drain that ends after the source went down brings the
    item level with the cache by a suspect image)."""

    def __init__(self, refresh_seq):
        self.refresh_seq, self.updates, self.last_seq = refresh_seq, [], refresh_seq


def streams(frames):
    """{item name: Stream}."""
    out, names = {}, {}
    for kind, body in frames:
        f = fields(body)
        item, seq = first(f, 1), first(f, 2)
        if kind == REFRESH and item not in names:
            names[item] = first(f, 7, b"").decode()
            out[names[item]] = Stream(seq)
        elif kind == UPDATE:
            check(item in names, f"update for item {item} before its image")
            out[names[item]].updates.append(f)
        if item in names:
            stream = out[names[item]]
            check(seq >= stream.last_seq, f"item {item}: {seq} after {stream.last_seq}")
            stream.last_seq = seq
    return out


def check_item(item, stream, final):
    updates = stream.updates
    seqs = [first(u, 2) for u in updates]
    check(seqs, f"item {item}: no updates")
    check(all(a < b for a, b in zip(seqs, seqs[1:])), f"item {item}: sequence not increasing")
    check(stream.last_seq == final, f"item {item}: ended at {stream.last_seq}, published {final}")
    trades = [u for u in updates if first(u, 6) == 1]
    published = [s for s in range(stream.refresh_seq + 1, final + 1) if s % TRADE_EVERY == 0]
    got = [first(u, 2) for u in trades]
    check(got == published, f"item {item}: trades {got[:8]}... ({len(got)}), published "
                            f"{published[:8]}... ({len(published)})")
    for u in trades:
        check(first(u, 5) == 0, f"item {item}: trade {first(u, 2)} conflated")
        check(acvol(u) == 10 * first(u, 2), f"item {item}: trade {first(u, 2)} not its own values")
    conflated = [u for u in updates if first(u, 5) == 1]
    for u in conflated:
        check(first(u, 7) >= 1, f"item {item}: conflated update {first(u, 2)} counts nothing")
        check(first(u, 8) <= first(u, 3), f"item {item}: conflated update {first(u, 2)} span")
    # Every update up to the last one received is accounted for exactly once.
    counted = sum(first(u, 7) if first(u, 5) == 1 else 1 for u in updates)
    check(counted == seqs[-1] - stream.refresh_seq,
          f"item {item}: updates stand for {counted}, published {seqs[-1] - stream.refresh_seq}")
    return conflated


def test_slow_consumer_gets_every_trade_in_order():
    with Stack("conflate-trades") as stack:
        stack.distributor()
        server = stack.server(1, extra=CONFLATE)
        source = stack.source("--items", str(ITEMS), "--rate", "5000", "--duration", "4",
                              "--trade-every", str(TRADE_EVERY))
        wait_for_log(source, "items registered")
        slow = stuck_subscriber(stack.client_ports[1], ITEMS)
        wait_for_log(server, "conflating", 20)
        running = lambda: source.popen.poll() is None  # noqa: E731
        frames = read_until_quiet(slow, 2.0, 40, slow_while=running)
        check(source.wait(15) == 0, "source failed")
        total = sent_updates(source)
        check(all(kind != CLOSE for kind, _ in frames), "the slow client was disconnected")
        got = streams(frames)
        check(len(got) == ITEMS, f"images for {len(got)} of {ITEMS} items")
        conflated = []
        for index in range(ITEMS):
            name = f"ITEM{index:06d}"
            check(name in got, f"no image for {name}")
            conflated += check_item(name, got[name], final_seq(index, total, ITEMS))
        check(any(first(u, 7) > 1 for u in conflated),
              "no conflated update stands for more than one: the client never fell behind")
        server.stop()


if __name__ == "__main__":
    run([test_slow_consumer_gets_every_trade_in_order])
