"""What the scale scenario reads from a running stack: the daemons' /metrics, the resident
memory of a process from /proc, the warnings and errors its log holds, and a poll that waits
for a figure to reach a target, stops when it has not moved for a while, and says which."""
import re
import time
import urllib.request

LOUD = re.compile(r"\b(warn|warning|error|critical)\b", re.I)
# What a step's own teardown logs (its publisher leaving, SIGTERM): not evidence for a limit.
TEARDOWN = re.compile(r"went away|said goodbye|shutting down|SIGTERM")


def rss_mb(pid):
    """Resident memory of a live process in MiB (VmRSS), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def admin_port(process, timeout=10):
    """The admin HTTP port the daemon logged (admin.port 0 picks a free one)."""
    process.wait_for_log("admin http on", timeout)
    return int(re.search(r"admin http on [\d.]+:(\d+)", process.log_text()).group(1))


def metric(port, name, default=0.0, timeout=5):
    """One unlabelled sample of /metrics; `default` when the daemon does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as response:
            text = response.read().decode()
    except OSError:
        return default
    match = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return float(match.group(1)) if match else default


def loud_lines(processes, limit=3):
    """The warning and error lines of the processes' logs (stderr), `limit` of them each,
    prefixed with the process name: the evidence that a limit was refused loudly."""
    found = []
    for p in processes:
        lines = [line.strip() for line in p.log_text().splitlines()
                 if LOUD.search(line) and not TEARDOWN.search(line)]
        found += [f"{p.name}: {line[-300:]}" for line in lines[:limit]]
    return found


class Poll:
    """Waits until read() reaches `target`, or has not grown for `stall_s` since it first grew,
    or `timeout_s` passes. value: the highest reading; seconds: from the start to the last
    growth. Before the first growth only the time bound applies (a stack may take a while to
    register a million items before the first image)."""

    def __init__(self, read, target, timeout_s, stall_s=10.0, interval_s=0.1):
        self.value, self.seconds, self.outcome = 0, 0.0, "reached"
        start = last_growth = time.monotonic()
        while True:
            now = time.monotonic()
            value = read()
            if value > self.value:
                self.value, last_growth = value, now
                self.seconds = now - start
            if self.value >= target:
                return
            if now - start >= timeout_s:
                self.outcome = f"time bound {timeout_s:g} s"
                return
            if self.value > 0 and now - last_growth >= stall_s:
                self.outcome = f"stalled {stall_s:g} s"
                return
            time.sleep(interval_s)
