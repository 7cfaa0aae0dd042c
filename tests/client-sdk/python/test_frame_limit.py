"""The distributor's frame limit (publishers.max_frame_bytes, docs/sdk.md "Frame limit") with
the real distributor and server and the Python SDK at both ends. A book or a field list over the
limit is refused at the call with ValueError while the publisher's other items keep flowing to a
consumer: the distributor never closes the publisher (no frame_too_large), which logs in once.
A distributor restarted with its limit lowered below an image the publisher keeps gets that
item closed (LIMIT_REACHED), not re-sent: the publisher reconnects once, for the restart, and
its other item goes on. Before the limit was announced, the SDK re-sent such an image after
every reconnect and was closed for it again, for ever."""
import time
from decimal import Decimal

import pytest

import harness
import mdcast
from conftest import collect, wait_for_service

LIMIT = 65536
OVER_LIMIT = f"over the distributor's frame limit of {LIMIT} bytes"


def logins(distributor):
    return distributor.log_text().count(" logged in: user=")


def frame_too_large_closes(distributor):
    port = harness.admin_port(distributor)
    return harness.metric(port, 'mdcast_distributor_closes_total{reason="frame_too_large"}')


def book_of(levels):
    return {Decimal(10000 + i) / 100: {"ORDER_SIZE": i + 1, "NO_ORD": 1} for i in range(levels)}


def updates_of(events, item):
    return [e for e in events if e.kind == "update" and e.item == item]


def test_a_book_or_field_list_over_the_limit_is_refused_at_the_call_and_the_rest_flows(stack):
    distributor = stack.distributor(extra_publishers=f"  max_frame_bytes: {LIMIT}\n")
    stack.server(1)
    with mdcast.Publisher(f"127.0.0.1:{stack.publisher_port}") as pub:
        assert pub.wait_connected(10)
        pub.add_service("LIMITS")
        quote, book = pub.add_item("LIMITS", "QUOTE"), pub.add_item("LIMITS", "BOOK")
        assert pub.refresh(quote, {"BID": 1.5})
        assert pub.refresh_book(book, "MarketByPrice", {}, book_of(10))
        assert pub.flush(10)
        with mdcast.Consumer(f"127.0.0.1:{stack.client_ports[1]}") as consumer:
            wait_for_service(consumer, "LIMITS")
            consumer.subscribe("LIMITS", "QUOTE")
            consumer.subscribe("LIMITS", "BOOK")
            collect(consumer, lambda ev: sum(e.kind == "refresh" for e in ev) == 2)

            with pytest.raises(ValueError, match="book refresh of .* " + OVER_LIMIT):
                pub.refresh_book(book, "MarketByPrice", {}, book_of(5000))
            with pytest.raises(ValueError, match="update of .* " + OVER_LIMIT):
                pub.update(quote, {"DSPLY_NAME": "Z" * LIMIT})
            with pytest.raises(ValueError, match=OVER_LIMIT):
                pub.update_book(book, {}, [(Decimal(1), "add", {"ORDER_SIZE": 1})] * 10000)
            for n in range(1, 6):
                assert pub.update(quote, {"BID": 1.5 + n})
            assert pub.update_book(book, {}, [(Decimal(2), "add", {"ORDER_SIZE": 7})])
            events = collect(consumer, lambda ev: len(updates_of(ev, "QUOTE")) == 5 and
                             len(updates_of(ev, "BOOK")) == 1)
            assert [e["BID"] for e in updates_of(events, "QUOTE")] == [2.5, 3.5, 4.5, 5.5, 6.5]
            assert not any(e.kind == "status" for e in events), events
        stats = pub.stats()
    assert stats["frames_refused"] == 3, stats
    assert stats["connections"] == 1 and stats["connection_losses"] == 0, stats
    assert logins(distributor) == 1
    assert frame_too_large_closes(distributor) == 0


def test_a_limit_lowered_below_a_kept_image_drops_only_that_item_after_one_reconnect(stack):
    first = stack.distributor()  # publishers.max_frame_bytes: 1 MiB
    stack.server(1)
    rejected = []
    with mdcast.Publisher(f"127.0.0.1:{stack.publisher_port}",
                          on_item_rejected=lambda *args: rejected.append(args)) as pub:
        assert pub.wait_connected(10)
        pub.add_service("LIMITS")
        quote, wide = pub.add_item("LIMITS", "QUOTE"), pub.add_item("LIMITS", "WIDE")
        assert pub.refresh(quote, {"BID": 1.5})
        assert pub.refresh(wide, {"DSPLY_NAME": "W" * (2 * LIMIT)})  # within 1 MiB
        assert pub.flush(10)
        first.stop()
        second = stack.distributor(extra_publishers=f"  max_frame_bytes: {LIMIT}\n")
        deadline = time.monotonic() + 20
        while not rejected and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(rejected) == 1, rejected
        item, code, text = rejected[0]
        assert item == wide and code == "LIMIT_REACHED" and OVER_LIMIT in text, rejected
        with mdcast.Consumer(f"127.0.0.1:{stack.client_ports[1]}") as consumer:
            wait_for_service(consumer, "LIMITS")
            consumer.subscribe("LIMITS", "QUOTE")
            consumer.subscribe("LIMITS", "WIDE")
            events = collect(consumer, lambda ev: any(e.kind == "refresh" for e in ev) and
                             any(e.kind == "status" and e.item == "WIDE" for e in ev))
            closed = next(e for e in events if e.kind == "status" and e.item == "WIDE")
            assert closed.stream_state == "closed", closed
            assert closed.status_code == mdcast.StatusCode.LIMIT_REACHED, closed
            for n in range(1, 4):
                assert pub.update(quote, {"BID": 1.5 + n})
            events = collect(consumer, lambda ev: len(updates_of(ev, "QUOTE")) == 3)
            assert [e["BID"] for e in updates_of(events, "QUOTE")] == [2.5, 3.5, 4.5]
        time.sleep(1)  # a loop would have logged in again by now (reconnects start at once)
        stats = pub.stats()
    assert stats["images_dropped"] == 1, stats
    assert stats["connections"] == 2 and stats["connection_losses"] == 1, stats
    assert logins(second) == 1
    assert frame_too_large_closes(second) == 0
