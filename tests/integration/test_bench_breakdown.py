"""mdcast-bench latency: each point has the wake-up floor measured in the same run beside it
and a "where the time goes" breakdown per hop, and the breakdown agrees with itself: every
stage timed the same sample, the hops follow the path in order, and they add up to the
end-to-end mean. Nothing here depends on how fast the machine is: the tolerances scale
with the point's own mean, and no absolute time is asserted."""
import csv
import glob
import os
import shutil
import subprocess
import tempfile

from harness import check, run

BENCH = os.environ.get("MDCAST_BENCH", "mdcast-bench")
HOPS = ["publisher_to_distributor", "distributor_in_to_out", "distributor_to_server", "server_in_to_out",
        "server_to_client"]


def run_latency_point():
    out = tempfile.mkdtemp(prefix="mdcast-bench-breakdown-")
    r = subprocess.run([BENCH, "latency", "--profiles", "latency", "--rates", "2000", "--seconds", "3",
                        "--warmup", "0.5", "--pin", "--out", out], capture_output=True, text=True, timeout=150)
    check(r.returncode == 0, f"mdcast-bench failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    folder = os.path.dirname(glob.glob(os.path.join(out, "*", "report.md"))[0])
    with open(os.path.join(folder, "latency.csv")) as f:
        rows = list(csv.DictReader(f))
    with open(os.path.join(folder, "report.md")) as f:
        text = f.read()
    return out, rows, text, r.stdout


def report_row(text):
    """The one data row of the report's "Where the time goes" table."""
    section = text.split("## Where the time goes", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| latency |")]
    check(len(rows) == 1, f"breakdown rows: {rows}")
    return [c.strip() for c in rows[0].strip("|").split("|")]


def number(cell):
    return float(cell.replace(",", ""))


def test_breakdown_beside_the_floor():
    out, rows, text, stdout = run_latency_point()
    check(len(rows) == 1, f"latency.csv: {rows}")
    row = rows[0]
    check(row["mean_us"] != "", f"the point did not run: {row['failures']}")
    mean = float(row["mean_us"])
    floor = float(row["floor_us"])
    check(mean > 0 and floor > 0 and float(row["floor_p50_us"]) > 0, f"floor or mean missing: {row}")
    hops = [float(row[f"{h}_us"]) for h in HOPS]
    sampled = int(row["hops_sampled"])
    # The daemons sample about one stamped update in four: some hundreds of the ~6,000 sent.
    check(sampled >= 50, f"too few sampled updates: {sampled}")
    # The hops follow the path: no stage sees an update before the stage before it (a slack of
    # a quarter of the mean for the window's edges, where a stage may count an update the one
    # before it timed outside the window). Only where the stack kept up: with a lag growing
    # through the window the stages' windows hold different updates, and the report says so.
    slack = 0.25 * mean + 50
    if row["passed"] == "True":
        check(all(h >= -slack for h in hops), f"a hop runs backwards: {hops} (mean {mean})")
        check(sum(hops[:4]) <= mean + slack, f"the daemons' stages add up past the end-to-end mean: {hops}")
    else:
        check("† The point did not keep up" in text, "a failed point's breakdown is not marked")
    check(abs(sum(hops) - mean) <= 0.01 * mean + 1, f"hops {hops} sum to {sum(hops)}, mean {mean}")
    cells = report_row(text)
    # profile, rate, floor (parts), floor p50, machine stalls, mean, mean - floor, five hops, sum, sampled
    check(len(cells) == 14, f"breakdown row: {cells}")
    parts = [number(x) for x in cells[2].replace("(", "").replace(")", "").replace("+", " ").split()]
    check(abs(parts[0] - sum(parts[1:])) <= 0.2, f"floor is not the sum of its hops: {cells[2]}")
    # The machine's stalls: a count over 1 ms and the longest gap of 1 s spinning on every CPU.
    stalls, longest = [number(x) for x in cells[4].split(";")]
    check(stalls >= 0 and longest > 0 and longest == float(row["stall_longest_ms"]),
          f"machine stalls cell {cells[4]} against {row['stall_longest_ms']}")
    check(abs(number(cells[5]) - mean) <= 0.1 and abs(number(cells[12]) - mean) <= 0.01 * mean + 1,
          f"report row disagrees with latency.csv: {cells} against mean {mean}")
    check(abs(number(cells[6]) - (mean - parts[0])) <= 0.2, f"mean − floor wrong: {cells}")
    check("floor µs" in stdout and "stall ms" in stdout and "publisher→distributor" in stdout, f"summary lacks the breakdown:\n{stdout}")
    shutil.rmtree(out)  # kept when a check fails, for its logs


if __name__ == "__main__":
    run([test_breakdown_beside_the_floor])
