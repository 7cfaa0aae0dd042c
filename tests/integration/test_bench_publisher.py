"""mdcast-bench's publisher measurements end to end: the `publisher` scenario (a distributor and
the SDK publisher asked for more than it takes, three ways of calling) writes a row per way with
the rate the distributor counted and the commands that ran; `--plain-updates` runs the latency
scenario's SDK source with plain update() calls (--unbatched). Rates are measured, never
asserted: a loaded machine makes them what it makes them."""
import os
import re
import shutil
import subprocess
import tempfile

from harness import check, run
from test_bench import numeric, table_rows

BENCH = os.environ.get("MDCAST_BENCH", "mdcast-bench")


def bench(*args, timeout):
    out = tempfile.mkdtemp(prefix="mdcast-bench-publisher-")
    r = subprocess.run([BENCH, *args, "--out", out], capture_output=True, text=True, timeout=timeout)
    check(r.returncode == 0, f"mdcast-bench {args[0]} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    folder = os.path.join(out, os.listdir(out)[0])
    with open(os.path.join(folder, "report.md")) as f:
        return out, folder, f.read()


def test_publisher_rate_per_way_of_calling():
    out, folder, text = bench("publisher", "--publisher-repeat", "1", "--rates", "200000", "--seconds", "1",
                              "--warmup", "0.5", "--pin", timeout=120)
    rows = {row[0]: row for row in table_rows(text, "| way of calling")}
    check(set(rows) == {"plain", "batch", "plain-io"}, f"rows {sorted(rows)}:\n{text}")
    for way, row in rows.items():
        check(numeric(row[1]) and float(row[1].replace(",", "")) > 0, f"{way}: no rate measured: {row}")
    publishers = [line for line in text.splitlines() if "mdcast-bench-publisher --distributor" in line]
    check(len(publishers) == 3 and all("--wait-when-full" in line for line in publishers), "\n".join(publishers))
    check(sum("--unbatched" in line for line in publishers) == 2, "plain calls not asked for")
    check(sum("--io-thread-writes" in line for line in publishers) == 1, "plain-io not asked for")
    leftover = subprocess.run(["pgrep", "-f", folder], capture_output=True, text=True).stdout.split()
    check(not leftover, f"processes left running: {leftover}")
    shutil.rmtree(out)  # kept when a check fails, for its logs


def test_latency_with_plain_update_calls():
    out, folder, text = bench("latency", "--profiles", "latency", "--rates", "2000", "--seconds", "1",
                              "--warmup", "0.5", "--plain-updates", timeout=90)
    check("plain update() calls" in text, text[:3000])
    with open(os.path.join(folder, "commands.txt")) as f:
        commands = f.read()
    check(re.search(r"mdcast-bench-publisher [^'\n]*--unbatched", commands), commands)
    shutil.rmtree(out)


if __name__ == "__main__":
    run([test_publisher_rate_per_way_of_calling, test_latency_with_plain_update_calls])
