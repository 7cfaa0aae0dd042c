"""Ending a program while a Consumer runs (docs/python.md, "Ending a program"): the script
ends, calls sys.exit() or raises, and the interpreter exits with the script's own status, never
SIGABRT; a SystemExit raised in a callback stops the consumer visibly and becomes the program's
exit status. Each case runs as its own python3 process against a real stack."""
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from conftest import ITEMS, start_source_stack

# The interpreter frees module globals after it has begun finalizing; a library's cleanup that
# releases the GIL then (here a sleep in __del__) lets a daemon thread that waits for the GIL run
# into the finalizing interpreter, as happens at random in ordinary programs.
PROGRAM = textwrap.dedent("""
    import sys, threading, time
    import mdcast

    servers, mode = sys.argv[1], sys.argv[2]
    items = sys.argv[3].split(",")
    seen = []

    class SlowTeardown:
        def __del__(self):
            time.sleep(0.3)

    teardown = SlowTeardown()

    def on_update(event):
        seen.append(event.sequence)
        if mode == "exit_in_callback" and len(seen) == 5:
            sys.exit(5)

    consumer = mdcast.Consumer(servers, on_update=on_update, on_refresh=lambda e: None)
    consumer.start()
    consumer.subscribe_batch("MDCAST", items)
    reader = None
    if mode == "reader_thread":
        # The application's own daemon thread, blocked in read() while the program ends.
        plain = mdcast.Consumer(servers).start()
        plain.subscribe_batch("MDCAST", items)
        reader = threading.Thread(target=lambda: [None for _ in plain.events(timeout=30)],
                                  daemon=True)
        reader.start()
    deadline = time.monotonic() + 10
    while len(seen) < 20 and time.monotonic() < deadline:
        if consumer.callback_exit is not None:
            break
        time.sleep(0.01)
    if mode == "exit":
        sys.exit(3)
    if mode == "raise":
        raise RuntimeError("the script failed")
    if mode == "exit_in_callback":
        after = len(seen)
        time.sleep(0.5)
        print("callbacks after the exit:", len(seen) - after, flush=True)
        consumer.stop()  # re-raises the callback's SystemExit: the program's status is 5
        print("not reached", flush=True)
    print("ended", len(seen) >= 20, flush=True)
""")

CASES = [("end", 0), ("exit", 3), ("raise", 1), ("reader_thread", 0), ("exit_in_callback", 5)]


def run_program(servers, mode):
    env = dict(os.environ, PYTHONFAULTHANDLER="")
    return subprocess.run([sys.executable, "-c", PROGRAM, servers, mode, ",".join(ITEMS)],
                          env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("mode,status", CASES, ids=[c[0] for c in CASES])
def test_a_program_ends_with_its_own_status(stack, mode, status):
    servers = start_source_stack(stack, rate=5000)
    for _ in range(3):  # the abort was a race: a few runs each
        done = run_program(servers, mode)
        assert done.returncode != -signal.SIGABRT, done.stderr
        assert "terminate called" not in done.stderr, done.stderr
        assert done.returncode == status, done.stderr
    if mode in ("end", "reader_thread"):
        assert "ended True" in done.stdout, done.stdout + done.stderr
    if mode == "exit_in_callback":
        assert "callbacks after the exit: 0" in done.stdout, done.stdout + done.stderr
        assert "not reached" not in done.stdout
        assert "SystemExit" in done.stderr and "consumer stops" in done.stderr, done.stderr
