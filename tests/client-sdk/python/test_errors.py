"""Errors a Python user sees: a refused login, a server that is down, bad arguments, and
requests larger than the server takes (split to fit, or refused at the call)."""
import gc
import os
import socket
import time

import pytest

import mdcast
from conftest import ITEMS, harness, password_hash, start_source_stack


def auth_section(stack):
    users = stack.write("users.yaml", f"""
users:
  alice:
    password: "{password_hash('alice-secret')}"
    allow:
      - service: "*"
""")
    return f"auth:\n  users_file: {users}\n"


def test_refused_login_raises_with_the_server_reason(stack):
    stack.distributor()
    server = stack.server(1, extra=auth_section(stack))
    harness.wait_for_log(server, "authentication on")
    address = f"127.0.0.1:{stack.client_ports[1]}"
    with mdcast.Consumer(address, user="alice", password="wrong") as consumer:
        with pytest.raises(mdcast.LoginRefused) as refused:
            consumer.wait_connected(timeout=3)
    assert "login_refused" in refused.value.text and "wrong password" in str(refused.value)

    password_file = stack.write("alice.pw", "alice-secret\n")
    with mdcast.Consumer(address, user="alice", password_file=password_file) as consumer:
        assert consumer.wait_connected(timeout=5) == address

    os.environ[mdcast._options.PASSWORD_ENV] = "alice-secret"
    try:
        with mdcast.Consumer(address, user="alice") as consumer:
            assert consumer.wait_connected(timeout=5) == address
    finally:
        del os.environ[mdcast._options.PASSWORD_ENV]


def test_server_down_is_an_error_not_a_hang():
    # A port held bound but not listening: connects are refused, and no test
    # running beside this one can start a server on it meanwhile (a port only
    # picked as free was once taken by another test's server under ctest -j).
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        server_down_is_an_error_not_a_hang(held.getsockname()[1])


def server_down_is_an_error_not_a_hang(port):
    with mdcast.Consumer(f"127.0.0.1:{port}", reconnect_delay_max=0.2) as consumer:
        consumer.subscribe("MDCAST", "ITEM000001")
        with pytest.raises(mdcast.NotConnected) as down:
            consumer.wait_connected(timeout=1)
        events = list(consumer.read(timeout=0.5))
    assert "refused" in down.value.text.lower() or "connect" in down.value.text.lower(), down.value.text
    assert any(e.kind == "connection" and e.connection_state == "down" for e in events)
    with pytest.raises(mdcast.ConsumerStopped):
        consumer.wait_connected(timeout=1)


def test_bad_arguments_are_python_exceptions():
    with pytest.raises(ValueError):
        mdcast.Consumer([])
    with pytest.raises(ValueError):
        mdcast.Consumer("no-port-here")
    consumer = mdcast.Consumer("127.0.0.1:1")
    with pytest.raises(ValueError):
        consumer.subscribe("MDCAST", "")
    consumer.subscribe("MDCAST", "A")
    with pytest.raises(ValueError):
        consumer.subscribe("MDCAST", "A")  # already streamed
    with pytest.raises(TypeError):
        consumer.subscribe("MDCAST", "B", view="BID")


def test_a_batch_larger_than_the_frame_limit_is_split_and_a_huge_name_refused(stack):
    """10,000 names (130 KB) in one batch used to make a frame over the server's 64 KiB: closed
    frame_too_large, re-sent after every reconnect for ever, the consumer's other items starved."""
    servers = start_source_stack(stack)
    with mdcast.Consumer(servers) as consumer:
        consumer.subscribe_batch("MDCAST", ITEMS)
        with pytest.raises(ValueError, match="longer than the limit"):
            consumer.subscribe("MDCAST", "X" * 100_000)
        unknown = [f"NOSUCH{i:05d}" for i in range(10_000)]
        consumer.subscribe_batch("MDCAST", unknown)
        closed, updates = set(), 0
        deadline = time.monotonic() + 60  # unanswered names are re-asked with backoff under load
        while len(closed) < len(unknown) and time.monotonic() < deadline:
            for event in consumer.read(0.2):
                if event.kind == "status" and event.stream_state == "closed":
                    closed.add(event.item)
                updates += event.kind == "update"
        stats = consumer.stats()
    assert closed == set(unknown), f"{len(closed)} of {len(unknown)} answered"
    assert updates > 0
    assert stats["connections"] == 1 and stats["connection_losses"] == 0, stats
    publisher = mdcast.Publisher("127.0.0.1:1")
    with pytest.raises(ValueError, match="longer than the limit"):
        publisher.add_service("S" * 300)


def test_closed_stream_from_a_stopped_source(stack):
    servers = start_source_stack(stack)
    with mdcast.Consumer(servers) as consumer:
        consumer.subscribe("MDCAST", "ITEM000001")
        next(e for e in consumer.events(timeout=5) if e.kind == "update")
        next(p for p in stack.processes if p.name == "source").stop()
        status = next(e for e in consumer.events(timeout=5) if e.kind == "status")
    assert status.data_state == "suspect" or status.stream_state == "closed", status
    assert status.status_code == mdcast.StatusCode.SOURCE_DOWN and status.status_text, status


def test_stop_right_after_start_never_hangs():
    # Regression: a stop() posted before the SDK's I/O thread entered its loop was lost.
    port = harness.free_port()
    for _ in range(20):
        mdcast.Consumer(f"127.0.0.1:{port}").start().stop()
        mdcast.Publisher(f"127.0.0.1:{port}").start().stop()
        gc.collect()  # here, not inside the next publisher's callbacks (see conftest.py)


def test_set_sched_slice_refuses_out_of_range_and_applies_in_range():
    for bad in (-1, 50, 100_001, 2**40):
        with pytest.raises(mdcast.MdcastError):
            mdcast.set_sched_slice(bad)
    try:
        mdcast.set_sched_slice(200)
    except mdcast.MdcastError as refused:  # a kernel before 6.12
        assert "ignores custom slices" in str(refused)
        pytest.skip(f"no custom slices on this kernel: {refused}")
    with open(f"/proc/thread-self/sched") as f:
        assert any(line.split()[-1] == "200000" for line in f if line.startswith("se.slice"))
    mdcast.set_sched_slice(0)
