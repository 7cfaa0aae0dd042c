"""process.sched_slice_us: both daemons run every thread with the configured
scheduler slice (Linux 6.12+, read back from /proc), and say so in the log; on
a kernel without custom slices they warn and run on."""
import os
import re

from harness import Stack, check, run, wait_for_log


def thread_slices(pid):
    """se.slice (ns) of each thread of `pid`; None where /proc shows no slice."""
    slices = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/sched") as f:
                found = re.search(r"^se\.slice\s*:\s*(\d+)", f.read(), re.M)
        except OSError:
            continue
        slices[tid] = int(found.group(1)) if found else None
    return slices


def test_both_daemons_run_every_thread_with_the_slice():
    with Stack("slice") as stack:
        extra = "process:\n  sched_slice_us: 200\n"
        daemons = {"distributor": stack.distributor(extra=extra), "server": stack.server(extra=extra)}
        for name, process in daemons.items():
            wait_for_log(process, "sched_slice_us")
            log = process.log_text()
            if "not applied" in log:
                check("ignores custom slices" in log, f"{name}: unexpected refusal:\n{log}")
                print(f"SKIP {name}: this kernel ({os.uname().release}) has no custom slices")
                continue
            check("scheduler slice 200 µs" in log, f"{name}: no confirmation in the log:\n{log}")
            slices = thread_slices(process.popen.pid)
            check(slices and all(s == 200_000 for s in slices.values()),
                  f"{name}: thread slices {slices}, expected 200000 ns each")


if __name__ == "__main__":
    run([test_both_daemons_run_every_thread_with_the_slice])
