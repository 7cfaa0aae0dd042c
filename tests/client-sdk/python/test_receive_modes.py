"""The three ways to receive: iterator (the other tests), callbacks (also with an
exception raised in one), and asyncio without a thread."""
import asyncio
import logging
import threading
import time

import mdcast
from conftest import ITEMS, expected_bid, start_source_stack


def wait_until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_callbacks_run_on_the_callback_thread(stack):
    servers = start_source_stack(stack)
    seen = {"refresh": [], "update": [], "connection": []}
    threads = set()

    def record(event):
        threads.add(threading.current_thread().name)
        seen[event.kind].append((event.item, event.sequence, event.text("BID")))

    with mdcast.Consumer(servers, on_refresh=record, on_update=record, on_connection=record) as consumer:
        consumer.subscribe_batch("MDCAST", ITEMS)
        wait_until(lambda: len(seen["update"]) >= 50)
    assert threads == {"mdcast-callbacks"}
    assert {item for item, _, _ in seen["refresh"]} == set(ITEMS)
    for item, seq, bid in seen["update"]:
        assert bid == expected_bid(item, seq)


def test_an_exception_in_a_callback_is_reported_and_the_stream_goes_on(stack, caplog):
    servers = start_source_stack(stack)
    updates = []
    errors = []

    def on_update(event):
        updates.append(event.sequence)
        if len(updates) == 3:
            raise RuntimeError("boom in the application")

    with mdcast.Consumer(servers, on_update=on_update,
                         on_error=lambda error, event: errors.append((error, event.item))) as consumer:
        consumer.subscribe("MDCAST", ITEMS[0])
        wait_until(lambda: len(updates) >= 20)
        assert consumer.stats()["callback_errors"] == 1
    assert len(errors) == 1 and isinstance(errors[0][0], RuntimeError) and errors[0][1] == ITEMS[0]
    assert all(b == a + 1 for a, b in zip(updates, updates[1:])), "an update was lost after the error"

    # Without on_error it goes to the "mdcast" logger, with the traceback.
    with caplog.at_level(logging.ERROR, logger="mdcast"):
        with mdcast.Consumer(servers, on_update=lambda e: 1 / 0) as consumer:
            consumer.subscribe("MDCAST", ITEMS[1])
            wait_until(lambda: consumer.stats()["callback_errors"] >= 2)
    assert any("ZeroDivisionError" in (r.exc_text or "") or r.exc_info for r in caplog.records)


def test_dispatch_on_the_callers_thread(stack):
    servers = start_source_stack(stack)
    got = []
    threads = threading.active_count()  # the main thread and the package's "mdcast-log"
    with mdcast.Consumer(servers, on_update=got.append, callback_thread=False) as consumer:
        consumer.subscribe("MDCAST", ITEMS[0])
        deadline = time.monotonic() + 10
        while len(got) < 10 and time.monotonic() < deadline:
            consumer.dispatch(timeout=0.5)
    assert len(got) >= 10 and threading.active_count() == threads


def test_asyncio_async_for_without_a_thread(stack):
    servers = start_source_stack(stack)

    async def main():
        events = []
        ticks = 0

        async def ticker():  # the loop stays free while waiting for data
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticking = asyncio.ensure_future(ticker())
        with mdcast.Consumer(servers) as consumer:
            consumer.subscribe_batch("MDCAST", ITEMS)
            python_threads = threading.active_count()
            async for event in consumer:
                events.append(event)
                if sum(e.kind == "update" for e in events) >= 100:
                    break
        ticking.cancel()
        return events, ticks, python_threads

    threads = threading.active_count()  # the main thread and the package's "mdcast-log"
    events, ticks, python_threads = asyncio.run(asyncio.wait_for(main(), 20))
    assert python_threads == threads, "asyncio consumption started a Python thread"
    assert ticks > 0
    last = {}
    for e in events:
        if e.kind in ("refresh", "update"):
            assert e.sequence > last.get(e.item, -1)
            assert e.text("BID") == expected_bid(e.item, e.sequence)
            last[e.item] = e.sequence


def test_async_for_ends_when_the_consumer_stops():
    async def main():
        consumer = mdcast.Consumer("127.0.0.1:1", reconnect_delay_max=0.2).start()
        asyncio.get_running_loop().call_later(0.3, consumer.stop)
        return [e async for e in consumer]

    events = asyncio.run(asyncio.wait_for(main(), 10))
    assert all(e.kind == "connection" for e in events)
