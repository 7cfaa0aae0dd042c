"""mdcast.Publisher(publish_to_all=True): one Python publisher feeding two
distributors at once. Both links come up and each gets every refresh and update;
kill -9 of one distributor is reported for that link alone (links(), on_connection)
while the publisher goes on through the other, and a consumer on the server (both
distributors in the service's redundancy group) keeps getting updates, in sequence,
with no status. A distributor listed twice is refused."""
import time

import mdcast
import pytest
from conftest import collect, wait_for_service
from test_several_backbones import add_distributor  # tests/integration, on the path (conftest)


def test_publish_to_all_goes_on_through_the_other_distributor(stack):
    ports = [add_distributor(stack, f"dist{n}", n, stack.group, stack.backbone_port) for n in (1, 2)]
    stack.server(1, extra="  source_silent_ms: 1000\n")
    addresses = [f"127.0.0.1:{port}" for port in ports]
    events = []
    with mdcast.Publisher(addresses, publish_to_all=True,
                          on_connection=lambda *e: events.append(e)) as pub:
        pub.wait_connected(5)
        deadline = time.monotonic() + 10
        while set(pub.links().values()) != {"up"} and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pub.links() == {address: "up" for address in addresses}
        pub.add_service("PYDUAL")
        item = pub.add_item("PYDUAL", "EUR=")
        assert pub.refresh(item, {"BID": 1.0850, "BIDSIZE": 1})
        assert pub.flush(5)
        with mdcast.Consumer(f"127.0.0.1:{stack.client_ports[1]}") as consumer:
            wait_for_service(consumer, "PYDUAL")
            consumer.subscribe("PYDUAL", "EUR=")
            refresh = next(e for e in consumer.events(timeout=5) if e.kind == "refresh")
            for n in range(1, 6):
                assert pub.update(item, {"BIDSIZE": 1 + n})
            assert pub.flush(5)
            stats = pub.stats()
            assert stats["refreshes_sent"] == 2 and stats["updates_sent"] == 10, (stats, events)  # once per distributor
            next(p for p in stack.processes if p.name == "dist1").popen.kill()  # kill -9
            deadline = time.monotonic() + 10
            while pub.links()[addresses[0]] == "up" and time.monotonic() < deadline:
                time.sleep(0.05)
            assert pub.links()[addresses[0]] != "up" and pub.links()[addresses[1]] == "up"
            for n in range(6, 11):
                assert pub.update(item, {"BIDSIZE": 1 + n})
                time.sleep(0.3)  # across the server's 1 s silence timeout and the switch
            got = collect(consumer, lambda ev: any(e.kind == "update" and e["BIDSIZE"] == 11 for e in ev))
        assert pub.flush(5)  # acknowledged by the link that is up
        assert pub.stats()["connection_losses"] == 1 and pub.stats()["links_dropped"] == 0
    assert [e for e in events if e[0] == "down" and e[1] == addresses[1]] == []
    assert not [e for e in got if e.kind == "status"]
    stream = [refresh] + [e for e in got if e.kind in ("refresh", "update")]
    assert len([e for e in stream if e.kind == "refresh"]) <= 2  # the first, and one at the switch
    for before, after in zip(stream, stream[1:]):  # every update follows on: no gap, no repeat
        assert after.kind == "refresh" or after.sequence == before.sequence + 1, (before, after)
    assert refresh["BIDSIZE"] == 1 and stream[-1]["BIDSIZE"] == 11


def test_publish_to_all_refuses_a_distributor_twice():
    with pytest.raises(ValueError, match="twice"):
        mdcast.Publisher(["127.0.0.1:14001", "127.0.0.1:14001"], publish_to_all=True)

