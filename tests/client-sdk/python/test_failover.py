"""Failover after kill -9 of the server in use: every item suspect at once, then a
fresh image from the other server, no update repeated or out of order."""
import signal
import time

import mdcast
from conftest import ITEMS, collect, expected_bid, start_source_stack


def test_kill_9_of_the_server_in_use(stack):
    servers = start_source_stack(stack, servers=2, rate=1000)
    with mdcast.Consumer(servers) as consumer:
        assert consumer.wait_connected(5) == f"127.0.0.1:{stack.client_ports[1]}"
        consumer.subscribe_batch("MDCAST", ITEMS)
        before = collect(consumer, lambda ev: {e.item for e in ev if e.kind == "update"} == set(ITEMS))
        server1 = next(p for p in stack.processes if p.name == "server1")
        server1.popen.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()

        def recovered(ev):
            suspect = {e.item for e in ev if e.kind == "status" and e.data_state == "suspect"}
            fresh = {e.item for e in ev if e.kind == "refresh" and e.item in suspect}
            updated = {e.item for e in ev if e.kind == "update" and e.item in fresh}
            return suspect == fresh == updated == set(ITEMS)
        after = collect(consumer, recovered)
        seconds = time.monotonic() - killed_at
    connection = [e for e in after if e.kind == "connection"]
    assert any(e.connection_state == "down" for e in connection)
    assert any(e.connection_state == "up" and e.server == f"127.0.0.1:{stack.client_ports[2]}"
               for e in connection), connection
    last = {}
    waiting = set()
    for e in before + after:
        if e.kind == "status":
            if e.data_state == "suspect":
                assert e.status_code == mdcast.StatusCode.CONNECTION_LOST, e
                waiting.add(e.item)
            continue
        if e.kind not in ("refresh", "update"):
            continue
        if e.kind == "update":
            assert e.item not in waiting, f"update before the fresh image: {e!r}"
            assert e.sequence > last.get(e.item, -1), f"repeated or out of order: {e!r} after {last[e.item]}"
        else:
            assert e.sequence >= last.get(e.item, -1), f"refresh went back: {e!r}"
            waiting.discard(e.item)
        assert e.text("BID") == expected_bid(e.item, e.sequence)
        last[e.item] = e.sequence
    print(f"failover: every item fresh and updating {seconds * 1000:.0f} ms after kill -9")
