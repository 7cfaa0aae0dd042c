"""mdcast.Publisher to a real distributor, read back with mdcast.Consumer: broadcast
refresh/update/status with every field kind, and an interactive service."""
import datetime

import mdcast
from conftest import collect, wait_for_service


def start_stack(stack):
    stack.distributor()
    stack.server(1)
    return f"127.0.0.1:{stack.publisher_port}", f"127.0.0.1:{stack.client_ports[1]}"


def test_broadcast_round_trip(stack):
    distributor, server = start_stack(stack)
    services = []
    with mdcast.Publisher(distributor, on_service=lambda *a: services.append(a)) as pub:
        assert pub.wait_connected(5) == distributor
        pub.add_service("PYSVC")
        item = pub.add_item("PYSVC", "VOD.L")
        when = datetime.datetime(2026, 1, 2, 3, 4, 5, 600000, tzinfo=datetime.timezone.utc)
        assert pub.refresh(item, {"DSPLY_NAME": "VODAFONE", "BID": 101.25, "ASK": "101.30",
                                  "BIDSIZE": 300, "MID_PRICE": 101.275, "QUOTIM": when, "CURRENCY": None})
        assert pub.flush(5)
        with mdcast.Consumer(server) as consumer:
            consumer.subscribe("PYSVC", "VOD.L")
            refresh = next(e for e in consumer.events(timeout=5) if e.kind == "refresh")
            for n in range(1, 11):
                assert pub.update(item, {"BID": 101.25 + n / 100, "BIDSIZE": 300 + n})
            assert pub.flush(5)
            updates = collect(consumer, lambda ev: sum(e.kind == "update" for e in ev) >= 10)
            pub.status(item, stream="closed", code=mdcast.StatusCode.NOT_FOUND, text="delisted")
            status = next(e for e in consumer.events(timeout=5) if e.kind == "status")
    assert services and services[0][:2] == ("PYSVC", True)
    assert refresh["DSPLY_NAME"] == "VODAFONE" and refresh.text("BID") == "101.25"
    assert refresh["ASK"] == 101.3 and refresh["BIDSIZE"] == 300 and refresh["MID_PRICE"] == 101.275
    assert refresh["QUOTIM"] == int(when.timestamp()) * 10**9 + 600000 * 1000
    assert refresh["CURRENCY"] is None and "CURRENCY" in refresh
    ups = [e for e in updates if e.kind == "update"]
    assert [e["BIDSIZE"] for e in ups] == list(range(301, 311))
    assert [e["BID"] for e in ups] == [round(101.25 + n / 100, 2) for n in range(1, 11)]
    assert all(e.publish_time_ns > 0 and e.sequence == refresh.sequence + n
               for n, e in enumerate(ups, 1))
    assert status.stream_state == "closed" and status.status_code == mdcast.StatusCode.NOT_FOUND
    assert status.status_text == "delisted"


def test_bad_fields_are_python_exceptions(stack):
    distributor, _ = start_stack(stack)
    with mdcast.Publisher(distributor) as pub:
        pub.add_service("PYSVC")
        item = pub.add_item("PYSVC", "X")
        for fields, error in (({"NO_SUCH": 1}, KeyError), ({"BIDSIZE": "many"}, TypeError),
                              ({"BID": "1.2.3"}, ValueError), ({"DSPLY_NAME": 5}, TypeError)):
            try:
                pub.refresh(item, fields)
            except error as e:
                assert list(fields)[0] in str(e)
            else:
                raise AssertionError(f"{fields} accepted")


def test_interactive_service_answers_requests(stack):
    distributor, server = start_stack(stack)
    requests = []
    pub = None

    def on_item_request(item, service, name):
        requests.append(name)
        if name == "NOPE":
            pub.status(item, stream="closed", code=mdcast.StatusCode.NOT_FOUND, text="no such item")
        else:
            pub.refresh(item, {"BID": 1.5, "DSPLY_NAME": name})

    def raising(*args):
        raise RuntimeError("application bug")

    pub = mdcast.Publisher(distributor, on_item_request=on_item_request,
                           on_connection=raising)
    with pub:
        pub.add_service("ONDEMAND", interactive=True)
        pub.wait_connected(5)
        with mdcast.Consumer(server) as consumer:
            wait_for_service(consumer, "ONDEMAND")
            wanted = consumer.subscribe("ONDEMAND", "ALPHA")
            consumer.subscribe("ONDEMAND", "NOPE")
            events = collect(consumer, lambda ev: any(e.kind == "refresh" for e in ev)
                             and any(e.item == "NOPE" and e.stream_state == "closed" for e in ev))
            assert wanted in {e.handle for e in events}
    refresh = next(e for e in events if e.kind == "refresh")
    assert refresh.item == "ALPHA" and refresh["BID"] == 1.5 and refresh["DSPLY_NAME"] == "ALPHA"
    status = next(e for e in events if e.item == "NOPE" and e.stream_state == "closed")
    assert status.stream_state == "closed" and status.status_code == mdcast.StatusCode.NOT_FOUND
    assert status.status_text == "no such item"
    assert sorted(requests) == ["ALPHA", "NOPE"]
    assert pub.stats()["callback_errors"] >= 1, "the raising on_connection was not reported"


def test_standby_rank_takes_over_with_the_sequence_carried_on(stack):
    """Two Publishers of one service on one distributor, ranks 1 and 2 with the
    operator's takeover secret: the second is a standby; when the first stops, the
    consumer gets one refresh with the standby's values at the next sequence, no
    status, then the standby's updates in sequence."""
    secret = stack.write("takeover.secret", "python-standby-secret-0123\n")
    stack.distributor(extra_publishers=f"  takeover_secret_file: {secret}")
    stack.server(1)
    distributor, server = f"127.0.0.1:{stack.publisher_port}", f"127.0.0.1:{stack.client_ports[1]}"
    answers = []
    primary = mdcast.Publisher(distributor, standby_rank=1, takeover_secret="python-standby-secret-0123")
    standby = mdcast.Publisher(distributor, standby_rank=2, takeover_secret="python-standby-secret-0123",
                               on_service=lambda *a: answers.append(a))
    handles = {}
    with primary, standby:
        for pub, bid in ((primary, 100), (standby, 200)):
            pub.wait_connected(5)
            pub.add_service("PYSVC")
            handles[pub] = pub.add_item("PYSVC", "VOD.L")
            assert pub.refresh(handles[pub], {"BID": bid, "BIDSIZE": 1})
            assert pub.flush(5)
        with mdcast.Consumer(server) as consumer:
            consumer.subscribe("PYSVC", "VOD.L")
            first = collect(consumer, lambda ev: any(e.kind == "refresh" for e in ev))
            for n in range(1, 4):
                assert primary.update(handles[primary], {"BIDSIZE": 1 + n})
                assert standby.update(handles[standby], {"BIDSIZE": 10 + n})
            assert primary.flush(5) and standby.flush(5)
            before = collect(consumer, lambda ev: sum(e.kind == "update" for e in ev) >= 3)
            primary.stop()
            after = collect(consumer, lambda ev: any(e.kind == "refresh" for e in ev))
            for n in range(4, 6):
                assert standby.update(handles[standby], {"BIDSIZE": 10 + n})
            assert standby.flush(5)
            after += collect(consumer, lambda ev: sum(e.kind == "update" for e in ev) >= 2)
    assert answers and answers[0][:3] == ("PYSVC", True, "standby (rank 2)")
    events = first + before + after
    assert not [e for e in events if e.kind == "status"]
    refreshes = [e for e in events if e.kind == "refresh"]
    assert len(refreshes) == 2 and refreshes[0]["BID"] == 100 and refreshes[1]["BID"] == 200
    assert refreshes[1]["BIDSIZE"] == 13  # the standby's image, kept current at the distributor
    sequences = [e.sequence for e in events if e.kind in ("refresh", "update")]
    assert sequences == list(range(sequences[0], sequences[0] + len(sequences)))
    assert [e["BIDSIZE"] for e in events if e.kind == "update"][-2:] == [14, 15]
