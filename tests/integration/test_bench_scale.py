"""mdcast-bench scale at tiny sizes: every step runs on its own stack, the report holds the scale
table with a row per dimension, every target row holds, and every limit asked past is refused
loudly with its evidence (a log line, a refused answer or a closed status) — none fails
silently. Before the server logged and counted cache.max_items refusals, the items row past
the limit read FAILED SILENTLY."""
import csv
import glob
import os
import re
import shutil
import subprocess
import tempfile

from harness import check, run

BENCH = os.environ.get("MDCAST_BENCH", "mdcast-bench")
DIMENSIONS = ["items cached by one server", "items past cache.max_items",
              "services accepted by one distributor", "services in a server's directory",
              "services past registry.max_services", "items in one service", "subscriptions on one connection",
              "images/s at subscribe (one connection)", "subscriptions past clients.max_subscriptions",
              "items recovered after a distributor restart", "client connections to one server",
              "connections past clients.max_connections"]


def test_scale_at_tiny_sizes():
    out = tempfile.mkdtemp(prefix="mdcast-bench-scale-")
    r = subprocess.run([BENCH, "scale", "--scale-items", "3000", "--scale-services", "20",
                        "--scale-service-items", "2000", "--scale-connections", "60",
                        "--scale-client-processes", "2", "--scale-beyond", "5", "--scale-timeout", "20",
                        "--out", out], capture_output=True, text=True, timeout=150)
    check(r.returncode == 0, f"mdcast-bench failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    folder = os.path.dirname(glob.glob(os.path.join(out, "*", "report.md"))[0])
    with open(os.path.join(folder, "report.md")) as f:
        text = f.read()
    check("## Scale envelope" in text and re.search(r"^mdcast-bench .*\bscale\b", text, re.M), text[:2000])
    with open(os.path.join(folder, "scale.csv")) as f:
        rows = {row["dimension"]: row for row in csv.DictReader(f)}
    check(sorted(rows) == sorted(DIMENSIONS), f"rows: {sorted(rows)}")
    for name, row in rows.items():
        if " past " in name:
            check(row["verdict"] == "refused loudly" and row["evidence"], f"{name}: {row}")
            check(int(row["reached"]) == int(row["target"]), f"{name}: the limit did not hold: {row}")
        elif name.startswith("images/s"):
            check(int(row["reached"]) > 0, f"{name}: no images measured: {row}")
        else:
            check(row["verdict"] == "holds", f"{name}: {row}")
    items = rows["items cached by one server"]["figure"]
    check("bytes per item" in items, items)
    with open(os.path.join(folder, "commands.txt")) as f:
        commands = f.read()
    check("mdcast-distributor" in commands and "scale_services.py" in commands, commands[:2000])
    leftover = subprocess.run(["pgrep", "-f", folder], capture_output=True, text=True).stdout.split()
    check(not leftover, f"processes left running: {leftover}")
    shutil.rmtree(out)


if __name__ == "__main__":
    run([test_scale_at_tiny_sizes])
