"""Backbone messages larger than one datagram, through the real daemons and the SDK at both
ends: a directory of 80 services and records of hundreds of fields travel in parts and are
put together by the server; a message over backbone.max_message_bytes is refused loudly, its
subscriber told why. Before parts, the directory past ~65 services and any image over
1,400 bytes were dropped at the distributor with only a counter."""
import harness
import mdcast
from conftest import collect, wait_for_service

SERVICES = 80


def start_stack(stack, extra_backbone=""):
    stack.distributor(extra=extra_backbone)
    stack.server(1)
    return f"127.0.0.1:{stack.publisher_port}", f"127.0.0.1:{stack.client_ports[1]}"


def first(events, kind):
    return next(e for e in events if e.kind == kind)


def test_a_directory_of_80_services_reaches_the_server_and_a_stop_is_seen(stack):
    distributor, server = start_stack(stack)
    with mdcast.Publisher(distributor) as pub:
        assert pub.wait_connected(5) == distributor
        for n in range(SERVICES):
            pub.add_service(f"SVC{n:03d}")
        item = pub.add_item(f"SVC{SERVICES - 1:03d}", "LAST.ITEM")
        assert pub.refresh(item, {"BID": 1.5})
        assert pub.flush(5)
        with mdcast.Consumer(server) as consumer:
            wait_for_service(consumer, f"SVC{SERVICES - 1:03d}")
            consumer.subscribe(f"SVC{SERVICES - 1:03d}", "LAST.ITEM")
            events = collect(consumer, lambda ev: any(e.kind == "refresh" for e in ev))
            assert first(events, "refresh")["BID"] == 1.5
            pub.stop()  # the publisher goes: its 80 services go down in the next directory
            events = collect(consumer, lambda ev: any(e.kind == "status" for e in ev))
            status = first(events, "status")
            assert status.data_state == "suspect"
            assert status.status_code == mdcast.StatusCode.SOURCE_DOWN, status


def test_an_image_of_hundreds_of_fields_arrives_whole(stack, tmp_path):
    distributor, server = start_stack(stack)
    # The shipped dictionary plus 300 application fields (ids from 40000): about 7 KB of image.
    fields = {f"APP_FIELD{n}": f"value-{n:04d}" for n in range(300)}
    dictionary = tmp_path / "wide.dict"
    dictionary.write_text(open(harness.ETC + "/fields.dict").read() + "".join(
        f"{40000 + n} APP_FIELD{n} STRING\n" for n in range(300)))
    with mdcast.Publisher(distributor, dictionary=str(dictionary)) as pub:
        assert pub.wait_connected(5) == distributor
        pub.add_service("BIG")
        item = pub.add_item("BIG", "WIDE.RECORD")
        assert pub.refresh(item, {"DSPLY_NAME": "X" * 3000, **fields})
        assert pub.flush(5)
        with mdcast.Consumer(server, dictionary=str(dictionary)) as consumer:
            wait_for_service(consumer, "BIG")
            consumer.subscribe("BIG", "WIDE.RECORD")
            refresh = first(collect(consumer, lambda ev: any(e.kind == "refresh" for e in ev)),
                            "refresh")
            assert refresh.data_state == "ok"
            assert refresh["DSPLY_NAME"] == "X" * 3000
            assert all(refresh[name] == value for name, value in fields.items())


def test_an_image_over_the_limit_is_refused_and_its_subscriber_told_why(stack):
    distributor, server = start_stack(stack, extra_backbone="  max_message_bytes: 4096\n")
    with mdcast.Publisher(distributor) as pub:
        assert pub.wait_connected(5) == distributor
        pub.add_service("BIG")
        item = pub.add_item("BIG", "TOO.WIDE")
        assert pub.refresh(item, {"DSPLY_NAME": "Y" * 6000})
        assert pub.flush(5)
        with mdcast.Consumer(server) as consumer:
            wait_for_service(consumer, "BIG")
            consumer.subscribe("BIG", "TOO.WIDE")
            status = first(collect(consumer, lambda ev: any(
                e.kind == "status" and e.stream_state == "closed" for e in ev)), "status")
    assert status.status_code == mdcast.StatusCode.LIMIT_REACHED, status
    assert "backbone.max_message_bytes (4096)" in status.status_text, status
    assert "over backbone.max_message_bytes" in stack.processes[0].log_text()  # and logged
