"""pytest fixtures for the mdcast Python package: real daemons on loopback,
started with tests/integration/harness.py (free ports, private multicast group,
stopped by PID even on failure, logs printed when a test fails)."""
import gc
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "integration"))
import harness  # noqa: E402

ITEMS = [f"ITEM{i:06d}" for i in range(5)]


def expected_bid(item, seq):
    """mdcast-source's BID for item ITEMnnnnnn at item sequence seq (docs/tools.md)."""
    i = int(item[4:])
    return f"{(10000 + 100 * i + seq % 1000) / 100:.2f}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, "report_" + report.when, report)


@pytest.fixture(autouse=True)
def collect_garbage_here():
    """Frees each test's cyclic garbage (a publisher whose callbacks refer to it) on the test's
    thread. A collection that runs inside an SDK callback thread and destroys another
    publisher there has aborted the interpreter (known issue, see docs/python.md)."""
    yield
    gc.collect()


@pytest.fixture
def stack(request):
    """A harness.Stack; its daemons' logs go to stderr when the test fails."""
    s = harness.Stack(request.node.name[:40])
    try:
        yield s
    finally:
        report = getattr(request.node, "report_call", None)
        s.finish(failed=report is None or report.failed)
        harness.remove_passed_dirs()  # the test is over: nothing reads its logs any more


def start_source_stack(stack, servers=1, items=len(ITEMS), rate=500, extra_server=""):
    """Distributor, `servers` server instances and mdcast-source; returns the
    consumers' failover list ("127.0.0.1:port,...")."""
    stack.distributor()
    for n in range(1, servers + 1):
        stack.server(n, extra=extra_server)
    source = stack.source("--items", str(items), "--rate", str(rate), "--duration", "60")
    harness.wait_for_log(source, "items registered")
    return ",".join(f"127.0.0.1:{stack.client_ports[n]}" for n in range(1, servers + 1))


def collect(consumer, until, timeout=10.0):
    """Events from consumer.events() until until(events) holds; fails after timeout s."""
    import time
    events = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events.extend(consumer.read(0.2))
        if until(events):
            return events
    raise AssertionError(f"condition not met within {timeout} s; last events: {events[-5:]}")


def wait_for_service(consumer, name, timeout=10.0):
    """Asks the server's directory until it lists service name as up (a service a
    publisher has just added reaches the servers one backbone directory later)."""
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        consumer.request_directory()
        for event in consumer.read(0.2):
            if event.kind == "directory" and any(s.name == name and s.up for s in event.services):
                return
    raise AssertionError(f"service {name} not in the server's directory within {timeout} s")


def password_hash(password):
    out = subprocess.run([os.environ.get("MDCAST_PASSWD", "mdcast-passwd"), "--iterations", "1000"],
                         input=password + "\n", capture_output=True, text=True, timeout=30, check=True)
    return out.stdout.strip()
