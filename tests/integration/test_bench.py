"""mdcast-bench quick end to end: it starts and stops whole stacks by itself and
writes a report whose every table is filled with measured numbers, CSVs and
charts. Numbers are not judged here: performance is measured, never asserted."""
import csv
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

from harness import check, run

BENCH = os.environ.get("MDCAST_BENCH", "mdcast-bench")


def table_rows(markdown, heading):
    """The data rows of every table under `heading` (until the next '## ' heading)."""
    section = markdown.split(heading, 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if line.startswith("|") and not re.match(r"^\|[-:|]+\|$", line):
            rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def numeric(cell):
    return re.fullmatch(r"[\d,]+(\.\d+)?", cell) is not None


def test_lean_tools_pinned():
    """--client lean --source lean runs mdcast-client and mdcast-source; --pin puts the daemons on
    the first core and the client processes on the others; as root, --realtime runs the daemons
    under SCHED_FIFO 55 and the client processes at 49 (a failed sched_setscheduler in the child
    fails its start, so a report means the policy was set)."""
    out = tempfile.mkdtemp(prefix="mdcast-bench-test-")
    realtime = ["--realtime"] if os.geteuid() == 0 else []
    if not realtime:
        print("not root: --realtime (SCHED_FIFO) not exercised")
    r = subprocess.run([BENCH, "latency", "--profiles", "latency", "--rates", "2000", "--seconds", "1",
                        "--warmup", "0.5", "--client", "lean", "--source", "lean", "--pin", *realtime,
                        "--out", out],
                       capture_output=True, text=True, timeout=90)
    check(r.returncode == 0, f"mdcast-bench failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    folder = os.path.dirname(glob.glob(os.path.join(out, "*", "report.md"))[0])
    with open(os.path.join(folder, "report.md")) as f:
        text = f.read()
    check("Client: **lean" in text and "Source: **lean" in text and "pinned with `--pin`" in text, text[:3000])
    with open(os.path.join(folder, "commands.txt")) as f:
        commands = f.read()
    if len(os.sched_getaffinity(0)) >= 2:
        check(re.search(r"taskset -c \d+ (chrt -f \d+ )?\S*mdcast-distributor", commands), commands)
        check(re.search(r"taskset -c [\d,]+ (chrt -f \d+ )?\S*mdcast-source", commands), commands)
        check(re.search(r"taskset -c [\d,]+ (chrt -f \d+ )?\S*mdcast-client", commands), commands)
    if realtime:
        check("SCHED_FIFO with `--realtime`" in text, text[:3000])
        check(re.search(r"chrt -f 55 \S*mdcast-distributor", commands), commands)
        check(re.search(r"chrt -f 49 \S*mdcast-source", commands), commands)
        check(re.search(r"chrt -f 49 \S*mdcast-client", commands), commands)
    with open(os.path.join(folder, "latency.csv")) as f:
        rows = list(csv.DictReader(f))
    check(len(rows) == 1 and rows[0]["client_cpu_us_per_update"], f"latency.csv: {rows}")
    shutil.rmtree(out)


def test_fanout_with_the_latency_profile():
    """--fanout-profile latency: the fanout point runs the latency profile's daemons (no timed
    writes towards the clients) and says so in the report and fanout.csv."""
    out = tempfile.mkdtemp(prefix="mdcast-bench-test-")
    r = subprocess.run([BENCH, "fanout", "--fanout-profile", "latency", "--servers", "1", "--connections", "2",
                        "--client-processes", "1", "--rates", "2000", "--seconds", "1", "--warmup", "0.5",
                        "--client", "lean", "--source", "lean", "--out", out],
                       capture_output=True, text=True, timeout=90)
    check(r.returncode == 0, f"mdcast-bench failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    folder = os.path.dirname(glob.glob(os.path.join(out, "*", "report.md"))[0])
    with open(os.path.join(folder, "report.md")) as f:
        text = f.read()
    check("every connection subscribed to every item, latency profile" in text, text[:3000])
    with open(os.path.join(folder, "fanout.csv")) as f:
        rows = list(csv.DictReader(f))
    check(len(rows) == 1 and rows[0]["profile"] == "latency", f"fanout.csv: {rows}")
    server_configs = glob.glob(os.path.join(folder, "logs", "*", "server.yaml"))
    check(len(server_configs) == 1, f"server configs: {server_configs}")
    with open(server_configs[0]) as f:
        check("timed_writes: false" in f.read(), "the server did not get the latency profile")
    shutil.rmtree(out)


def test_quick_writes_a_complete_report():
    out = tempfile.mkdtemp(prefix="mdcast-bench-test-")
    r = subprocess.run([BENCH, "quick", "--out", out], capture_output=True, text=True, timeout=150)
    check(r.returncode == 0, f"mdcast-bench failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    reports = glob.glob(os.path.join(out, "*", "report.md"))
    check(len(reports) == 1, f"reports: {reports}")
    folder = os.path.dirname(reports[0])
    with open(reports[0]) as f:
        text = f.read()
    check("run failed" not in text and "no summary" not in text, f"a point did not run:\n{text}")
    for needle in ("| cores |", "Linux", "## Command", "mdcast-bench", "quick", "X5450"):
        check(needle in text, f"report lacks {needle!r}")

    latency = table_rows(text, "## Latency against update rate")
    ours = [row for row in latency if row[0].replace(",", "").isdigit() and len(row) == 14]
    check([row[0] for row in ours] == ["1,000", "10,000", "100,000"], f"latency rows {ours}")
    for row in ours:
        check(all(numeric(c) for c in row[1:11]), f"latency row not filled: {row}")
        check(numeric(row[11]) and numeric(row[12]), f"seed columns missing: {row}")
        check(int(row[5].replace(",", "")) > 0, f"no latency points: {row}")

    fanout = [row for row in table_rows(text, "## Fanout") if len(row) == 14 and row[1] in ("1", "2")]
    check(len(fanout) == 2 and all(row[0] == "sdk" for row in fanout), f"fanout rows {fanout}")
    for row in fanout:
        check(all(numeric(c) for c in row[2:11] + row[12:13]), f"fanout row not filled: {row}")
        check(re.fullmatch(r"[\d,]+ \([\d,]+\)", row[11]), f"machine CPU not filled: {row}")
    best = [row for row in table_rows(text, "## Fanout") if len(row) == 3]
    check(any(r[0].startswith("seed: RMDS 6.3 SLERT/InfiniBand") for r in best), f"seed Table 1 missing: {best}")

    sizes = [row for row in table_rows(text, "## Latency against update size") if row[0].isdigit()]
    check([row[0] for row in sizes] == ["64", "256", "1024"], f"size rows {sizes}")
    for row in sizes:
        check(all(numeric(c) for c in row[2:8]), f"size row not filled: {row}")

    for name, rows in (("latency.csv", 3), ("fanout.csv", 2), ("sizes.csv", 3)):
        with open(os.path.join(folder, name)) as f:
            data = list(csv.DictReader(f))
        check(len(data) == rows and all(d["mean_us"] for d in data), f"{name}: {data}")
    with open(os.path.join(folder, "histograms.csv")) as f:
        check(sum(1 for _ in f) > 10, "histograms.csv is empty")
    with open(os.path.join(folder, "commands.txt")) as f:
        commands = f.read()
    check(commands.count("mdcast-bench-publisher --distributor") == 8, "commands.txt lacks the SDK source commands")
    # One consumer process per latency and size point, two per fanout point (--client-processes 2).
    check(commands.count("mdcast-bench-consumer --server") == 3 + 2 * 2 + 3,
          "commands.txt lacks the SDK client commands")
    check("Client: **sdk" in text and "Source: **sdk" in text, "report does not say which client and source ran")
    # The SDK client's Consumers share one IoContext per process by default, and the report says so.
    check(commands.count("--io-threads 1 ") == 3 + 2 * 2 + 3, "the SDK clients do not share one I/O thread")
    check("SDK client I/O threads per process: **1 shared" in text, "report does not say the SDK client's threads")
    cpu = [row for row in table_rows(text, "## CPU per update") if len(row) == 7 and row[0].startswith(("latency", "fanout", "sizes"))]
    check(len(cpu) == 8, f"CPU per update rows {cpu}")
    for row in cpu:
        check(all(numeric(c) for c in row[1:]), f"CPU per update row not filled: {row}")

    has_matplotlib = subprocess.run(["/usr/bin/python3", "-c", "import matplotlib"],
                                    capture_output=True).returncode == 0
    if has_matplotlib:
        for chart in ("latency.png", "fanout.png", "sizes.png", "histograms.png"):
            path = os.path.join(folder, chart)
            check(os.path.getsize(path) > 5000 and f"]({chart})" in text, f"chart {chart} missing")
    else:
        sys.stderr.write("python3-matplotlib not installed: charts not checked\n")
        check("python3-matplotlib is not installed" in text, "missing charts not explained")
    # Every process was stopped: nothing of this run is left behind.
    leftover = subprocess.run(["pgrep", "-f", folder], capture_output=True, text=True).stdout.split()
    check(not leftover, f"processes left running: {leftover}")
    shutil.rmtree(out)  # kept when a check fails, for its logs


if __name__ == "__main__":
    run([test_lean_tools_pinned, test_fanout_with_the_latency_profile, test_quick_writes_a_complete_report])
