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
    from conftest import harness
    stack.distributor()
    server = stack.server(1)
    publisher = run("publisher.py", "--distributors", f"127.0.0.1:{stack.publisher_port}",
                    "--rate", "20", "--duration", "5")
    harness.wait_for_log(server, "service PYQUOTES (")  # the server knows the service is up
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


def measure(rate, seconds, mode, items=1000):
    """A private stack (distributor, server, mdcast-source at `rate` updates/s over
    `items` items) and latency_probe.py in `mode`; prints the probe's report."""
    from conftest import harness
    with harness.Stack("python-measure") as stack:
        servers = start_source_stack(stack, items=items, rate=rate)
        print(output(run("latency_probe.py", "--servers", servers, "--items", str(items),
                         "--duration", str(seconds), "--warmup", "2", "--mode", mode),
                     timeout=seconds + 60), end="")


if __name__ == "__main__":
    # python3 test_examples.py --measure RATE SECONDS [iterator|batch|asyncio]: not part of the suite.
    if len(sys.argv) >= 4 and sys.argv[1] == "--measure":
        measure(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else "iterator")
    else:
        sys.exit(pytest.main([__file__, "-q"]))


def test_book(stack):
    """book.py publishes a book and follows it; docs/books.md shows it verbatim."""
    stack.distributor()
    stack.server(1)
    out = output(run("book.py", "--distributors", f"127.0.0.1:{stack.publisher_port}",
                     "--servers", f"127.0.0.1:{stack.client_ports[1]}"))
    assert "refresh add    101.25 {'ORDER_SIZE': 500, 'NO_ORD': 3}" in out, out
    assert "update  delete 101.5 {}" in out, out  # one key per price: 101.50 is 101.5
    assert "MarketByPrice, 2 levels, best offer 101.25" in out, out
    assert out.rstrip().endswith("{'ORDER_SIZE': 700, 'NO_ORD': 3} True"), out
    docs = open(os.path.join(os.path.dirname(__file__), "../../../docs/books.md")).read()
    example = open(os.path.join(EXAMPLES, "book.py")).read()
    assert f"```python\n{example}```" in docs, "docs/books.md: the Python example is not book.py"
