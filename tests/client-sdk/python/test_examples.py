"""The examples in client-sdk/python/examples run against a local stack (CI)."""
import os
import re
import subprocess
import sys

import pytest

from conftest import start_source_stack

EXAMPLES = os.environ.get("MDCAST_PYTHON_EXAMPLES",
                          os.path.join(os.path.dirname(__file__), "../../../client-sdk/python/examples"))


def run(name, *args, timeout=60):
    return subprocess.Popen([sys.executable, os.path.join(EXAMPLES, name), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def output(process, timeout=60):
    out, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, out
    return out


def test_publisher_and_watchlist(stack):
    stack.distributor()
    stack.server(1)
    publisher = run("publisher.py", "--distributors", f"127.0.0.1:{stack.publisher_port}",
                    "--rate", "20", "--duration", "4")
    watchlist = run("watchlist.py", "--servers", f"127.0.0.1:{stack.client_ports[1]}",
                    "--service", "PYQUOTES", "--duration", "3", "VOD.L", "BARC.L", "NOPE.L")
    watched = output(watchlist)
    published = output(publisher)
    assert re.search(r"^VOD\.L +\d+\.\d+ +\d+\.\d+ +seq \d+", watched, re.M), watched
    assert re.search(r"NOPE\.L +closed/\w+ NOT_FOUND", watched), watched
    updates = int(re.search(r"(\d+) images, (\d+) updates", watched).group(2))
    assert updates >= 20, watched
    assert "service PYQUOTES: accepted" in published and "updates published" in published


@pytest.mark.parametrize("mode", ["iterator", "batch", "asyncio"])
def test_latency_probe(stack, mode):
    servers = start_source_stack(stack, items=100, rate=2000)
    out = output(run("latency_probe.py", "--servers", servers, "--items", "100", "--duration", "2",
                     "--warmup", "0.5", "--mode", mode))
    rate = float(re.search(r"= ([\d,]+) updates/s", out).group(1).replace(",", ""))
    assert rate > 500, out
    assert re.search(r"latency us: p50 [\d.]+", out), out
