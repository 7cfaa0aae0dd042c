"""mdcast.Consumer against real daemons: images and every update in order, views,
snapshots, unknown items, unsubscribe, directory, the batch API."""
import math

import mdcast
from conftest import ITEMS, collect, expected_bid, start_source_stack


def item_events(events):
    return [e for e in events if e.kind in ("refresh", "update", "status")]


def test_image_then_every_update_in_order(stack):
    servers = start_source_stack(stack)
    with mdcast.Consumer(servers) as consumer:
        handles = consumer.subscribe_batch("MDCAST", ITEMS)
        assert len(set(handles)) == len(ITEMS)
        events = collect(consumer, lambda ev: all(
            sum(1 for e in ev if e.item == item and e.kind == "update") >= 20 for item in ITEMS))
    by_item = {}
    for e in item_events(events):
        by_item.setdefault(e.item, []).append(e)
    for item, evs in by_item.items():
        assert evs[0].kind == "refresh", f"{item}: first event {evs[0]!r}"
        assert evs[0].ok and "DSPLY_NAME" in evs[0].fields
        seqs = [e.sequence for e in evs]
        assert all(b == a + 1 for a, b in zip(seqs, seqs[1:])), f"{item}: sequences {seqs}"
        for e in evs:
            assert e.handle == handles[ITEMS.index(item)]
            assert e.text("BID") == expected_bid(item, e.sequence)
            assert math.isclose(e["BID"], float(expected_bid(item, e.sequence)))
            assert e["ASK"] == e.fields["ASK"]
        assert all(e.publish_time_ns > 0 for e in evs[1:]), "updates carry the publisher's stamp"


def test_view_delivers_only_its_fields(stack):
    servers = start_source_stack(stack)
    with mdcast.Consumer(servers) as consumer:
        consumer.subscribe("MDCAST", ITEMS[1], view=["BID", "ASK"])
        events = collect(consumer, lambda ev: sum(e.kind == "update" for e in ev) >= 5)
        try:
            consumer.subscribe("MDCAST", ITEMS[2], view=["NO_SUCH_FIELD"])
        except ValueError as error:
            assert "NO_SUCH_FIELD" in str(error)
        else:
            raise AssertionError("an unknown view field was accepted")
    data = [e for e in events if e.kind in ("refresh", "update")]
    assert data[0].kind == "refresh"
    for e in data:
        assert set(e.fields) <= {"BID", "ASK"}, e.fields
        assert "BID" in e and "BIDSIZE" not in e


def test_snapshot_is_one_refresh(stack):
    servers = start_source_stack(stack)
    with mdcast.Consumer(servers) as consumer:
        handle = consumer.snapshot("MDCAST", ITEMS[0])
        events = collect(consumer, lambda ev: any(e.kind == "refresh" for e in ev))
        events += list(consumer.events(timeout=0.5))
    mine = [e for e in events if e.handle == handle]
    assert len(mine) == 1 and mine[0].snapshot and mine[0].kind == "refresh", mine
    assert mine[0].text("BID") == expected_bid(ITEMS[0], mine[0].sequence)


def test_unknown_item_and_service_get_a_closed_status_with_the_server_text(stack):
    servers = start_source_stack(stack)
    with mdcast.Consumer(servers) as consumer:
        consumer.subscribe("MDCAST", "NO.SUCH.ITEM")
        consumer.subscribe("NOSERVICE", "ITEM000001")
        events = collect(consumer, lambda ev: sum(e.kind == "status" for e in ev) >= 2)
    statuses = {e.service + "/" + e.item: e for e in events if e.kind == "status"}
    for key in ("MDCAST/NO.SUCH.ITEM", "NOSERVICE/ITEM000001"):
        e = statuses[key]
        assert e.stream_state == "closed" and e.status_code == mdcast.StatusCode.NOT_FOUND, e
        assert e.status_text, f"{key}: no text from the server"


def test_a_source_going_down_is_one_group_frame_delivered_as_each_item_status(stack):
    names = [f"ITEM{i:06d}" for i in range(300)]
    servers = start_source_stack(stack, items=len(names), rate=100)
    with mdcast.Consumer(servers) as consumer:
        consumer.subscribe_batch("MDCAST", names)
        collect(consumer, lambda ev: len({e.item for e in ev if e.kind == "refresh"}) == len(names))
        next(p for p in stack.processes if p.name == "source").stop()
        events = collect(consumer, lambda ev: len({e.item for e in ev if e.kind == "status"}) == len(names))
        stats = consumer.stats()
    statuses = [e for e in events if e.kind == "status"]
    assert sorted(e.item for e in statuses) == names
    assert {(e.stream_state, e.data_state, e.status_code, e.status_text) for e in statuses} == {
        ("open", "suspect", mdcast.StatusCode.SOURCE_DOWN, "service MDCAST is down: its source went away")}
    assert stats["group_statuses"] == 1, stats
    assert stats["statuses"] == len(names), stats


def test_unsubscribe_stops_the_item_directory_lists_the_service(stack):
    servers = start_source_stack(stack)
    with mdcast.Consumer(servers) as consumer:
        a, b = consumer.subscribe_batch("MDCAST", ITEMS[:2])
        collect(consumer, lambda ev: {e.handle for e in ev if e.kind == "update"} >= {a, b})
        consumer.unsubscribe(a)
        consumer.request_directory()
        later = collect(consumer, lambda ev: sum(e.handle == b for e in ev) >= 10
                        and any(e.kind == "directory" for e in ev))
    assert not [e for e in later if e.handle == a], "events after unsubscribe"
    services = [s for e in later if e.kind == "directory" for s in e.services]
    mdcast_service = [s for s in services if s.name == "MDCAST"]
    assert mdcast_service and mdcast_service[0].up and mdcast_service[0].mode == "broadcast"
    # One distributor carries it: no redundancy group (docs/operations.md, "Redundancy").
    assert mdcast_service[0].group_members == 0 and not mdcast_service[0].group_active
    assert "group=" not in repr(mdcast_service[0])


def test_batch_api_hands_many_updates_per_call(stack):
    servers = start_source_stack(stack, rate=5000)
    with mdcast.Consumer(servers) as consumer:
        consumer.subscribe_batch("MDCAST", ITEMS)
        seen = 0
        largest = 0
        for batch in consumer.batches(timeout=2.0):
            bids = batch.values("BID", math.nan)
            assert len(bids) == len(batch) == len(batch.items()) == len(batch.sequences())
            for event, bid, item, seq in zip(batch, bids, batch.items(), batch.sequences()):
                assert event.item == item and event.sequence == seq
                if event.kind in ("refresh", "update"):
                    assert bid == event["BID"]
            seen += len(batch)
            largest = max(largest, len(batch))
            if seen >= 5000:
                break
    assert seen >= 5000 and largest > 1


def test_busy_poll_delivers_every_update_in_order(stack):
    """busy_poll (ConsumerOptions::busy_poll_us): the I/O thread polls between frames and the
    data is the same; out of range is refused before anything starts."""
    servers = start_source_stack(stack)
    with mdcast.Consumer(servers, busy_poll=0.002) as consumer:
        consumer.subscribe_batch("MDCAST", ITEMS)
        events = collect(consumer, lambda ev: all(
            sum(1 for e in ev if e.item == item and e.kind == "update") >= 10 for item in ITEMS))
    for item in ITEMS:
        seqs = [e.sequence for e in item_events(events) if e.item == item]
        assert all(b == a + 1 for a, b in zip(seqs, seqs[1:])), f"{item}: sequences {seqs}"
    for wrong in (-0.001, 1.5):
        try:
            mdcast.Consumer(servers, busy_poll=wrong)
        except ValueError as error:
            assert "busy_poll" in str(error)
        else:
            raise AssertionError(f"busy_poll={wrong} was accepted")
