"""The reason travels to the Python (and so the C++) SDK's user. An image served while its
source is down is suspect with the code and text that made it so (SOURCE_DOWN, "service ... is
down"), not code NONE and no text. A consumer the server closes hears why before the
connection goes: kicked by an operator, drained, or over clients.max_connections_per_user — the down
connection event's close_reason and text, and each streaming item's suspect status."""
import json
import urllib.request

import mdcast
from conftest import ITEMS, collect, start_source_stack

import harness

TOKEN = "the-admin-token-of-this-test-0123"


def test_an_image_of_a_source_that_is_down_says_why(stack):
    servers = start_source_stack(stack)
    source = stack.processes[-1]
    with mdcast.Consumer(servers) as first:
        first.subscribe("MDCAST", ITEMS[0])
        collect(first, lambda evs: any(e.kind == "refresh" for e in evs))
        source.stop()  # its service goes down; the distributor still holds the images
        collect(first, lambda evs: any(e.kind == "status" and e.status_code == mdcast.StatusCode.SOURCE_DOWN
                                       for e in evs))
    with mdcast.Consumer(servers) as later:
        later.subscribe("MDCAST", ITEMS[1])
        events = collect(later, lambda evs: any(e.kind == "refresh" for e in evs), timeout=15)
    image = next(e for e in events if e.kind == "refresh")
    assert image.data_state == "suspect", image
    assert image.status_code == mdcast.StatusCode.SOURCE_DOWN, (image.status_code, image.status_text)
    assert "MDCAST is down" in image.status_text, image.status_text


def admin(port, path, method="GET"):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read().decode())


def closed_by_operator(stack, action):
    """A consumer of ITEM000000 on a server whose operator then POSTs `action` (given the
    client's id); the events after the refresh, until the connection went down and the
    item was told."""
    token_file = stack.write("admin.token", TOKEN + "\n")
    stack.distributor()
    server = stack.server(1, extra=f"admin:\n  port: 0\n  token_file: {token_file}\n")
    source = stack.source("--items", "3", "--rate", "100", "--duration", "60")
    harness.wait_for_log(source, "items registered")
    port = harness.admin_port(server)
    with mdcast.Consumer(f"127.0.0.1:{stack.client_ports[1]}", reconnect_delay_min=5.0) as consumer:
        consumer.subscribe("MDCAST", ITEMS[0])
        collect(consumer, lambda evs: any(e.kind == "refresh" for e in evs))
        [client] = admin(port, "/stats")["clients"]
        admin(port, action(client["id"]), method="POST")
        # The Down event first, then each item's suspect status (perhaps in a later batch).
        return collect(consumer, lambda evs: any(e.kind == "connection" and e.connection_state == "down"
                                                 for e in evs) and any(e.kind == "status" for e in evs))


def test_a_kicked_consumer_hears_why(stack):
    events = closed_by_operator(stack, lambda client: f"/kick?id={client}")
    down = next(e for e in events if e.kind == "connection" and e.connection_state == "down")
    assert down.close_reason == "kicked", (down.close_reason, down.status_text)
    assert "closed by an operator" in down.status_text, down.status_text
    status = next(e for e in events if e.kind == "status")
    assert status.data_state == "suspect"
    assert "closed by the server: kicked: closed by an operator" in status.status_text, status.status_text


def test_a_drained_consumer_hears_why(stack):
    events = closed_by_operator(stack, lambda client: "/drain?seconds=2")
    down = next(e for e in events if e.kind == "connection" and e.connection_state == "down")
    assert down.close_reason == "shutdown", (down.close_reason, down.status_text)
    assert "server draining" in down.status_text, down.status_text
    status = next(e for e in events if e.kind == "status")
    assert status.status_code == mdcast.StatusCode.SERVER_SHUTDOWN, status
    assert "closed by the server: shutdown: server draining" in status.status_text, status.status_text


def test_a_consumer_over_the_per_user_limit_hears_why(stack):
    stack.distributor()
    stack.server(1, extra_clients="  max_connections_per_user: 1\n")
    address = f"127.0.0.1:{stack.client_ports[1]}"
    with mdcast.Consumer(address) as first:
        first.wait_connected(5)  # holds the user's one connection
        with mdcast.Consumer(address, reconnect_delay_min=5.0) as second:
            events = collect(second, lambda evs: any(e.kind == "connection" and e.connection_state == "down"
                                                     for e in evs))
    down = next(e for e in events if e.kind == "connection" and e.connection_state == "down")
    assert down.close_reason == "limit_reached", (down.close_reason, down.status_text)
    assert "clients.max_connections_per_user (1) reached" in down.status_text, down.status_text
