"""Capture and replay: mdcast-capture records a run's backbone, mdcast-replay
publishes the recording into a fresh stack, and a client there sees each item's
values in the order a client of the original run saw them. A capture of a
distributor that loses packets on send reports the gaps; a rotating capture
keeps only the newest files, each within its size. A capture whose timestamps
jump by a century replays with the jump cut to --max-gap."""
import csv
import glob
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import time

from harness import BIN, Stack, check, run, wait_for_log
from streams import by_item, messages, sent_updates

ITEMS = 10
NAMES = [f"ITEM{i:06d}" for i in range(ITEMS)]


def start_capture(stack, path, *args):
    p = stack.start("capture", [BIN["capture"], "--groups", f"{stack.group}:{stack.backbone_port}",
                                "--write", path, "--duration", "60", *args], stdout=True)
    wait_for_log(p, "writing")
    return p


def capture_a_source(stack, path, rate, seconds, settle):
    """Captures mdcast-source at `rate` for `seconds` into path, `settle` s more, then stops
    the capture; returns it."""
    capture = start_capture(stack, path)
    source = stack.source("--items", str(ITEMS), "--rate", str(rate), "--duration", str(seconds))
    check(source.wait(20) == 0, "source failed")
    time.sleep(settle)
    stop_by_signal(capture)
    return capture


def summary_of(process):
    for line in process.json_lines():
        if line.get("type") == "capture_summary":
            return line
    raise AssertionError(f"{process.name}: no capture_summary line")


def stop_by_signal(process, timeout=20):
    process.popen.send_signal(signal.SIGTERM)
    check(process.wait(timeout) == 0, f"{process.name} exit code")


def updates_by_item(client):
    """Per item: the field values of every update, in the order received."""
    return {name: [m["fields"] for m in got if m["type"] == "update"]
            for name, got in by_item(messages(client)).items()}


def original_run(path):
    """A source under a client, captured; returns the client's updates and the summary."""
    with Stack("capture") as stack:
        stack.distributor()
        stack.server(1)
        capture = start_capture(stack, path)
        source = stack.source("--items", str(ITEMS), "--rate", "500", "--duration", "3")
        wait_for_log(source, "items registered")
        client = stack.client(1, "--items", ",".join(NAMES), "--duration", "60")
        check(source.wait(20) == 0, "source failed")
        time.sleep(0.5)
        stop_by_signal(client)
        stop_by_signal(capture)
        return updates_by_item(client), summary_of(capture), sent_updates(source)


def replayed_run(path):
    """The capture replayed at recorded speed into a new stack; a client subscribes while
    it plays. Returns the client's messages and the replay's summary line."""
    with Stack("replay") as stack:
        stack.distributor()
        server = stack.server(1)
        # A small window: the replay waits for the distributor's acknowledgement every 200 updates.
        replay = stack.start("replay", [BIN["replay"], path, "--distributor",
                                        f"127.0.0.1:{stack.publisher_port}", "--window", "200"], stdout=True)
        wait_for_log(server, "is up", timeout=15)
        time.sleep(0.5)  # every item is registered (their images come first in the capture)
        client = stack.client(1, "--items", ",".join(NAMES), "--duration", "60")
        check(replay.wait(30) == 0, "replay failed")
        time.sleep(0.5)
        stop_by_signal(client)
        summary = [m for m in replay.json_lines() if m.get("type") == "source_summary"]
        check(summary, "replay printed no source_summary")
        return messages(client), summary[0]


def check_same_sequence(name, original, replayed_lines):
    """The replayed client's updates are the original's from some point on, to the end,
    and its image holds the values of the original update just before that point."""
    got = by_item(replayed_lines).get(name, [])
    check(got and got[0]["type"] == "refresh", f"{name}: replay client's first message {got[:1]}")
    updates = [m["fields"] for m in got if m["type"] == "update"]
    check(len(updates) >= len(original) // 3, f"{name}: only {len(updates)} replayed updates "
          f"of {len(original)}")
    check(updates[0] in original, f"{name}: first replayed update {updates[0]} never sent")
    start = original.index(updates[0])
    check(updates == original[start:], f"{name}: replayed updates differ from the original "
          f"run's from update {start} on")
    image = got[0]["fields"]
    if start > 0:
        before = original[start - 1]
        check(all(image.get(k) == v for k, v in before.items()),
              f"{name}: image {image} is not the values of the update before {updates[0]}")


def test_capture_then_replay_gives_a_client_the_same_values():
    with Stack("capreplay") as holder:
        path = os.path.join(holder.dir, "run.pcap")
    original, summary, sent = original_run(path)
    check(summary["updates"] == sent, f"captured {summary['updates']} updates of {sent} sent")
    check(summary["items"] == ITEMS and summary["refreshes"] >= ITEMS, f"items: {summary}")
    check(summary["gaps"] == 0 and summary["malformed"] == 0, f"a clean run has gaps: {summary}")
    check(summary["files"] == [path] and os.path.getsize(path) == summary["file_bytes"],
          f"files: {summary['files']}")
    replayed, replay_summary = replayed_run(path)
    check(replay_summary["sent"] == sent and replay_summary["items"] == ITEMS,
          f"replay summary {replay_summary} after {sent} sent")
    for name in NAMES:
        check(len(original.get(name, [])) > 50, f"{name}: the original client saw too little")
        check_same_sequence(name, original[name], replayed)
    check_bench_replays(path)


def check_bench_replays(path):
    """mdcast-bench --replay runs a latency point with the capture as its load."""
    out = tempfile.mkdtemp(prefix="mdcast-bench-replay-")
    r = subprocess.run([os.environ.get("MDCAST_BENCH", "mdcast-bench"), "latency", "--profiles", "latency",
                        "--replay", path, "--seconds", "1", "--warmup", "0.5", "--out", out],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"mdcast-bench --replay failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    folder = os.path.dirname(glob.glob(os.path.join(out, "*", "report.md"))[0])
    with open(os.path.join(folder, "report.md")) as f:
        text = f.read()
    check("Source: **replay (mdcast-replay: the capture run.pcap" in text, text[:2000])
    with open(os.path.join(folder, "commands.txt")) as f:
        commands = f.read()
    check("mdcast-replay " + path in commands and "--images-first" in commands, commands)
    # The point ran at the capture's rate (500 updates/s recorded) and its clients got it all.
    with open(os.path.join(folder, "latency.csv")) as f:
        rows = list(csv.DictReader(f))
    check(len(rows) == 1 and 400 <= int(rows[0]["rate"]) <= 600, f"latency.csv: {rows}")
    check(0.9 * int(rows[0]["rate"]) <= float(rows[0]["received_per_s"]) <= 1.1 * int(rows[0]["rate"]),
          f"received {rows[0]['received_per_s']}/s of {rows[0]['rate']}/s")
    shutil.rmtree(out)


def test_a_capture_of_a_lossy_distributor_reports_its_gaps():
    loss = "testing:\n  loss:\n    send_rate: 0.05\n    seed: 7"
    with Stack("capgap") as stack:
        stack.distributor(extra=loss)
        stack.server(1)  # its NAKs bring repairs onto the groups
        capture = capture_a_source(stack, os.path.join(stack.dir, "gaps.pcap"), 2000, 2, 1)
        summary = summary_of(capture)
        check(summary["gaps"] > 0 and summary["missing"] >= summary["gaps"],
              f"no gap reported under 5 % send loss: {summary}")
        source_line = summary["sources"][0]
        check(source_line["gaps"] == summary["gaps"], f"per-source gaps: {summary['sources']}")
        check(summary["repairs"] > 0 and 0 < source_line["filled"] <= source_line["missing"],
              f"repairs seen but no gap filled: {summary}")
        check(f"{summary['gaps']} gaps" in capture.log_text(), "the log line lacks the gaps")


def test_a_rotating_capture_keeps_the_newest_files_within_their_size():
    with Stack("caprotate") as stack:
        stack.distributor()
        path = os.path.join(stack.dir, "rot.pcap")
        capture = start_capture(stack, path, "--max-file-bytes", "20000", "--max-files", "3")
        source = stack.source("--items", str(ITEMS), "--rate", "2000", "--duration", "1")
        check(source.wait(20) == 0, "source failed")
        time.sleep(0.3)
        stop_by_signal(capture)
        files = summary_of(capture)["files"]
        check(len(files) == 3, f"kept {files}")
        check(not os.path.exists(path), "the oldest file was not deleted")
        check(all(os.path.getsize(f) <= 20000 for f in files), "a file is over its size")
        left = sorted(os.listdir(stack.dir))
        check(sum(name.endswith(".pcap") for name in left) == 3, f"files left: {left}")
        check(files[-1].endswith(".pcap") and ".rot." not in files[-1], f"names: {files}")


def test_the_packet_limit_stops_a_capture_and_a_failed_write_fails_it():
    with Stack("caplimits") as stack:
        stack.distributor()
        path = os.path.join(stack.dir, "limit.pcap")
        capture = start_capture(stack, path, "--max-packets", "100")
        full = stack.start("capture-full", [BIN["capture"], "--groups", f"{stack.group}:{stack.backbone_port}",
                                            "--write", "/dev/full", "--duration", "60"], stdout=True)
        wait_for_log(full, "writing")
        source = stack.source("--items", str(ITEMS), "--rate", "2000", "--duration", "2")
        check(capture.wait(20) == 0, "the capture did not stop at its packet limit")
        check(summary_of(capture)["packets"] == 100, f"summary: {summary_of(capture)}")
        check("packet limit reached" in capture.log_text(), capture.log_text()[-1000:])
        check(full.wait(20) == 1, "a capture that cannot write did not fail")
        check("cannot write /dev/full" in full.log_text(), full.log_text()[-1000:])
        check(source.wait(20) == 0, "source failed")


def jump_in_time(path, out):
    """Copies the pcap at path with every packet of its first half moved back to December 1901
    (a 32-bit time of -2^31 s, as pcap readers take it): between the halves the capture's time
    jumps 125 years. Returns the packet count."""
    with open(path, "rb") as f:
        data = f.read()
    records, pos = [], 24
    while pos + 16 <= len(data):
        sec, frac, incl, orig = struct.unpack_from("<IIII", data, pos)
        records.append([sec, frac, incl, orig, data[pos + 16:pos + 16 + incl]])
        pos += 16 + incl
    first = records[0][0]
    for r in records[:len(records) // 2]:
        r[0] = 0x80000000 + r[0] - first
    with open(out, "wb") as f:
        f.write(data[:24])
        for sec, frac, incl, orig, payload in records:
            f.write(struct.pack("<IIII", sec, frac, incl, orig) + payload)
    return len(records)


def test_a_capture_whose_time_jumps_a_century_replays_with_the_gap_cut():
    with Stack("capjump") as stack:
        stack.distributor()
        path = os.path.join(stack.dir, "short.pcap")
        capture_a_source(stack, path, 200, 1, 0.3)
        hostile = os.path.join(stack.dir, "jump.pcap")
        check(jump_in_time(path, hostile) > 20, "capture too short")
        with Stack("replayjump") as fresh:
            fresh.distributor()
            replay = fresh.start("replay", [BIN["replay"], hostile, "--distributor",
                                            f"127.0.0.1:{fresh.publisher_port}"], stdout=True)
            started = time.monotonic()
            check(replay.wait(60) == 0, f"replay did not finish: {replay.log_text()[-1500:]}")
            elapsed = time.monotonic() - started
        # Recorded speed: the capture's second plus the jump cut to --max-gap's default of 10 s.
        check(9 < elapsed < 40, f"replay took {elapsed:.1f} s")
        check("1 gaps cut to --max-gap" in replay.log_text(), replay.log_text()[-1500:])
        summary = [m for m in replay.json_lines() if m.get("type") == "source_summary"]
        check(summary and summary[0]["sent"] > 0, f"summary: {summary}")


if __name__ == "__main__":
    run([test_capture_then_replay_gives_a_client_the_same_values,
         test_a_capture_of_a_lossy_distributor_reports_its_gaps,
         test_a_rotating_capture_keeps_the_newest_files_within_their_size,
         test_the_packet_limit_stops_a_capture_and_a_failed_write_fails_it,
         test_a_capture_whose_time_jumps_a_century_replays_with_the_gap_cut])
