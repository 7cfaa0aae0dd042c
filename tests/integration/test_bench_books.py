"""mdcast-bench books end to end, at a tiny size: field lists and MarketByPrice books through
the same harness in one run, a fanout point and a latency point of each. The report holds a
summary row per measure (latency figures for both kinds), a row per point with its rate out,
books.json the same; every book point's clients read book actions (the server forwarded maps,
not empty updates) and lost nothing.
Rates and latencies are measured, never judged: a loaded machine makes them what it makes them."""
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile

from harness import check, run
from test_bench import numeric, table_rows

BENCH = os.environ.get("MDCAST_BENCH", "mdcast-bench")


def test_books_beside_field_lists():
    out = tempfile.mkdtemp(prefix="mdcast-bench-books-")
    r = subprocess.run([BENCH, "books", "--book-connections", "2", "--rates", "2000", "--book-latency-rates",
                        "1000", "--book-levels", "2:5", "--fanout-items", "20", "--seconds", "1", "--warmup", "0.5",
                        "--out", out], capture_output=True, text=True, timeout=240)
    check(r.returncode == 0, f"mdcast-bench books failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    folder = os.path.dirname(glob.glob(os.path.join(out, "*", "report.md"))[0])
    with open(os.path.join(folder, "report.md")) as f:
        text = f.read()
    rows = {row[0]: row for row in table_rows(text, "## Books beside field lists")[1:]}
    expected = ["updates/s out of one server"] + [f"latency {s} µs at 1,000/s" for s in ("mean", "p50", "p99", "p99_9")]
    check(sorted(rows) == sorted(expected), f"summary rows {sorted(rows)}:\n{text[:4000]}")
    # The fanout figure is the best *passing* point's: a point a loaded machine fails (a source tick
    # missed) leaves '–' there, so only the latency rows must always carry numbers.
    for measure, row in rows.items():
        if measure.startswith("latency"):
            check(numeric(row[2]) and numeric(row[3]), f"{measure}: a kind without a figure: {row}\n{text[:4000]}")
    every = [row for row in table_rows(text, "## Every point") if len(row) > 6 and row[1] in ("fanout", "latency")]
    check(len(every) == 4 and all(numeric(row[5]) for row in every), f"points: {every}")
    with open(os.path.join(folder, "books.json")) as f:
        points = json.load(f)["points"]
    check(sorted((p["kind"], p["part"]) for p in points)
          == sorted((k, part) for k in ("books", "field lists") for part in ("fanout", "latency")), f"{points}")
    for p in points:
        loss = [f for f in p["failures"] if re.search("loss|closed|errors|no summary|run failed", f)]
        check(not loss, f"{p['kind']} {p['part']}: {loss}")
    with open(os.path.join(folder, "commands.txt")) as f:
        commands = f.read()
    check(re.search(r"mdcast-bench-publisher [^\n]*--book-levels 2:5", commands), commands)
    check(re.search(r"mdcast-bench-consumer [^\n]*--books", commands), commands)
    for log in glob.glob(os.path.join(folder, "logs", "*books*", "client*.log")):
        with open(log) as f:
            read = re.search(r"book actions read: (\d+)", f.read())
        check(read and int(read.group(1)) > 0, f"{log}: no book actions read")
    check(glob.glob(os.path.join(folder, "logs", "*books*", "client*.log")), "no book client logs")
    shutil.rmtree(out)  # kept when a check fails, for its logs


if __name__ == "__main__":
    run([test_books_beside_field_lists])
