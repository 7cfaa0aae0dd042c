"""Trades from Python: Publisher.trade() marks an update a trade, or the
distributor does for a service whose trades.fields it carries; a consumer
subscribed with conflate_ms sees every trade (event.trade) on its own, in
order, with its own values, and the quotes between them conflated, each
conflated event saying how many updates it stands for (event.stands_for) and
from when (event.first_publish_time_ns)."""
import os

import mdcast
from conftest import collect

TRADES = list(range(10, 61, 10))  # updates 10, 20 ... 60 are trades, the rest quotes
DICTIONARY = os.path.join(os.path.dirname(__file__), "../../../etc/fields.dict")


def publish_and_receive(stack, marked_by_publisher):
    """A burst of 60 updates (far more than one a second) to a conflate_ms=1000
    subscriber; returns its refresh and the updates until the sixth trade."""
    stack.server(1)
    distributor, server = f"127.0.0.1:{stack.publisher_port}", f"127.0.0.1:{stack.client_ports[1]}"
    with mdcast.Publisher(distributor) as pub:
        assert pub.wait_connected(5) == distributor
        pub.add_service("PYSVC")
        item = pub.add_item("PYSVC", "TRD.L")
        assert pub.refresh(item, {"BID": 100.0, "TRDPRC_1": 0.0})
        assert pub.flush(5)
        with mdcast.Consumer(server) as consumer:
            consumer.subscribe("PYSVC", "TRD.L", conflate_ms=1000)
            refresh = next(e for e in consumer.events(timeout=5) if e.kind == "refresh")
            for n in range(1, 61):
                if n not in TRADES:
                    assert pub.update(item, {"BID": 100 + n / 100})
                elif marked_by_publisher:
                    assert pub.trade(item, {"TRDPRC_1": float(n)})
                else:
                    assert pub.update(item, {"TRDPRC_1": float(n)})
            assert pub.flush(5)
            events = collect(consumer,
                             lambda ev: sum(e.kind == "update" and e.trade for e in ev) == 6)
    return refresh, [e for e in events if e.kind == "update"]


def check_trades_and_counts(refresh, updates):
    trades = [e for e in updates if e.trade]
    assert [e.sequence - refresh.sequence for e in trades] == TRADES
    assert [e["TRDPRC_1"] for e in trades] == [float(n) for n in TRADES]  # each its own value
    assert not any(e.conflated for e in trades)
    sequences = [e.sequence for e in updates]
    assert sequences == sorted(sequences)
    conflated = [e for e in updates if e.conflated]
    assert any(e.stands_for > 1 for e in conflated), [e.stands_for for e in conflated]
    assert all(0 < e.first_publish_time_ns <= e.publish_time_ns for e in conflated)
    assert sum(e.stands_for if e.conflated else 1 for e in updates) == 60


def test_trades_and_conflation_counts_reach_python(stack):
    stack.distributor()
    check_trades_and_counts(*publish_and_receive(stack, marked_by_publisher=True))


def test_the_distributor_marks_updates_carrying_trades_fields(stack):
    # The publisher marks nothing; PYSVC's trades.fields makes TRDPRC_1 updates trades.
    stack.distributor(extra=f"trades:\n  fields:\n    PYSVC: [TRDPRC_1]\n"
                            f"  dictionary_file: \"{DICTIONARY}\"\n")
    check_trades_and_counts(*publish_and_receive(stack, marked_by_publisher=False))
