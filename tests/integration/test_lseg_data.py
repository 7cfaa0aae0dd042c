"""LSEG's own Python library, `lseg-data`, unmodified, against mdcast: installed from PyPI into
a throw-away venv (the wheels kept under the build directory, so a second run needs no
network), it opens a deployed-platform session on the server's WebSocket port, streams prices
for three items, takes a snapshot and loads the field dictionary; the values it shows are
checked against what the source published, the field definitions against etc/fields.dict. Skipped, saying so, only when PyPI cannot be reached and no wheels are kept."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request

from harness import BIN, Stack, check, free_port, remove_passed_dirs, wait_for_log, wait_for_port
from streams import expected_fields
from ws_client import ws_section

SKIP = 77
PACKAGE = "lseg-data==2.1.1"  # the version these checks were written against
HERE = os.path.dirname(os.path.abspath(__file__))
WHEELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(BIN["server"]))), "lseg-wheels")
ITEMS = ["ITEM000000", "ITEM000001", "ITEM000002"]


def pypi_reachable():
    try:
        with urllib.request.urlopen("https://pypi.org/simple/lseg-data/", timeout=15) as answer:
            return answer.status == 200
    except OSError as error:
        print(f"PyPI cannot be reached: {error}")
        return False


def have_wheels():
    return os.path.isdir(WHEELS) and any(name.startswith("lseg_data-") for name in os.listdir(WHEELS))


def make_venv(work):
    """A venv with lseg-data installed from the kept wheels; None when they cannot be had.
    MDCAST_LSEG_DATA_PYTHON names an interpreter that has it already (to iterate by hand)."""
    if os.environ.get("MDCAST_LSEG_DATA_PYTHON"):
        return os.environ["MDCAST_LSEG_DATA_PYTHON"]
    if not have_wheels():
        if not pypi_reachable():
            return None
        os.makedirs(WHEELS, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--dest", WHEELS, PACKAGE],
                       check=True, timeout=600)
    venv = os.path.join(work, "venv")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=120)
    python = os.path.join(venv, "bin", "python")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-index", "--find-links", WHEELS, PACKAGE],
                   check=True, timeout=600)
    return python


def findings(lines):
    return {entry["step"]: entry for entry in (json.loads(line) for line in lines if line.startswith("{"))}


def close_to_published(item, values):
    """BID and ASK as mdcast-source publishes them for some sequence of this item."""
    index = int(item[4:])
    for seq in range(0, 1000):
        want = expected_fields(index, seq)
        if abs(float(values["BID"]) - float(want["BID"])) < 1e-9 and \
                abs(float(values["ASK"]) - float(want["ASK"])) < 1e-9:
            return True
    return False


def check_values(rows, what):
    check(len(rows) == len(ITEMS), f"{what}: {len(rows)} rows: {rows}")
    for row in rows:
        item = row.get("Instrument")
        check(item in ITEMS, f"{what}: row {row}")
        check(close_to_published(item, row), f"{what}: {item} shows BID {row.get('BID')} ASK {row.get('ASK')}, "
                                             "not a value the source published")


def test_lseg_data_streams_and_snapshots():
    work = tempfile.mkdtemp(prefix="mdcast-lseg-data-")
    python = make_venv(work)
    if python is None:
        shutil.rmtree(work, ignore_errors=True)
        print("SKIP: PyPI cannot be reached and no lseg-data wheels are kept in " + WHEELS)
        return SKIP
    with Stack("lseg-data") as stack:
        stack.distributor()
        port = free_port()
        server = stack.server(1, extra_clients=ws_section(port, "  ws_default_service: MDCAST\n"))
        wait_for_port(port, server)
        source = stack.source("--items", str(len(ITEMS)), "--rate", "30", "--duration", "90")
        wait_for_log(source, "items registered")
        client = stack.start("lseg-data", [python, os.path.join(HERE, "lseg_data_client.py"),
                                           f"127.0.0.1:{port}", "MDCAST", *ITEMS], stdout=True)
        try:
            code = client.popen.wait(timeout=90)
        except subprocess.TimeoutExpired:  # the library waits for ever on a stream it cannot match
            client.popen.kill()
            code = "nothing: killed after 90 s"
        lines = open(client.stdout_path).read().splitlines()
        found = findings(lines)
        check(code == 0, f"lseg-data exited {code}: {lines[-5:]}\n{client.log_text()[-3000:]}")
        check("Opened" in found["session"]["state"], f"session {found['session']}")
        stream = found["stream"]
        check(stream["complete"] and stream["refreshes"] == sorted(ITEMS), f"stream {stream}")
        check(all(count >= 3 for count in stream["updates"].values()), f"updates {stream['updates']}")
        check_values(found["stream_values"]["values"], "streaming prices")
        check_values(found["snapshot"]["values"], "snapshot")
        fields = found["dictionary"]["fields"]
        check(fields == {"BID": {"fid": 22, "type": "PRICE", "rwf_type": "RWF_REAL64", "long_name": "BID"},
                         "BIDSIZE": {"fid": 30, "type": "INTEGER", "rwf_type": "RWF_INT64",
                                     "long_name": "BIDSIZE"},
                         "DSPLY_NAME": {"fid": 3, "type": "ALPHANUMERIC", "rwf_type": "RWF_UTF8_STRING",
                                        "long_name": "DSPLY_NAME"}},
              f"the library's field dictionary: {found['dictionary']}")
        check(set(found["dictionary"]["versions"]) == {"RWFFld", "RWFEnum"},
              f"dictionary versions {found['dictionary']['versions']}")
        check("closed" in found, "the session did not close")
    shutil.rmtree(work, ignore_errors=True)
    remove_passed_dirs()
    return 0


if __name__ == "__main__":
    sys.exit(test_lseg_data_streams_and_snapshots())
