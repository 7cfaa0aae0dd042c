"""mdcast-bench cutover end to end: two distributors and their sources, a server and a client
started and stopped by the bench itself; the report has a row per failure with every item
switched to the standby and no image request (the switch is hot). Times are measured, never
asserted: a loaded machine makes them what it makes them."""
import os
import re
import shutil
import subprocess
import tempfile

from harness import check, run
from test_bench import numeric, table_rows

BENCH = os.environ.get("MDCAST_BENCH", "mdcast-bench")


def test_cutover_writes_a_row_per_failure():
    out = tempfile.mkdtemp(prefix="mdcast-bench-cutover-")
    r = subprocess.run([BENCH, "cutover", "--cutover-items", "200", "--cutover-repeat", "1",
                        "--cutover-failures", "publisher-kill,distributor-stop", "--cutover-silent-ms", "1500",
                        "--out", out], capture_output=True, text=True, timeout=150)
    check(r.returncode == 0, f"mdcast-bench cutover failed:\n{r.stdout}\n{r.stderr}")
    folder = os.path.join(out, os.listdir(out)[0])
    with open(os.path.join(folder, "report.md")) as f:
        text = f.read()
    rows = {row[1]: row for row in table_rows(text, "## Cut-over")[1:]}  # after the header row
    check(set(rows) == {"publisher-kill", "distributor-stop"}, f"rows {sorted(rows)}")
    for failure, reason in (("publisher-kill", "service_down"), ("distributor-stop", "source_silent")):
        row = rows[failure]
        check(row[0] == "200" and row[2] == reason and row[3] == "1 (1)", f"{failure}: {row}")
        check(numeric(row[4]) and numeric(row[5]) and row[6] == "0", f"{failure}: times or image requests {row}")
    check(re.search(r"^mdcast-bench .*cutover", text, re.M), "the command is not in the report")
    leftover = subprocess.run(["pgrep", "-f", folder], capture_output=True, text=True).stdout.split()
    check(not leftover, f"processes left running: {leftover}")
    shutil.rmtree(out)  # kept when a check fails, for its logs


if __name__ == "__main__":
    run([test_cutover_writes_a_row_per_failure])
