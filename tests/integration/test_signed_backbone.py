"""Signed backbone: with backbone.key_file every packet carries a truncated
HMAC-SHA256; a server with the same key gets every update, a server with
another key drops everything (counted) and its clients get no data, and a
server in a key rollover (new key + previous_key_file) still accepts the old
key's packets."""
import os
import re

from harness import Stack, check, run, wait_for_log
from streams import check_full_stream, messages, sent_updates

ITEMS = 5
NAMES = [f"ITEM{i:06d}" for i in range(ITEMS)]


def counter(log, name):
    values = re.findall(rf"\b{name}=(\d+)", log)
    check(values, f"no '{name}' counter in the log")
    return int(values[-1])


def test_signed_packets_are_required_and_rotated():
    with Stack("signed") as stack:
        old_key, new_key = stack.write("old.key", os.urandom(32).hex()), stack.write("new.key", os.urandom(32).hex())
        stack.distributor(extra=f"  key_file: {old_key}")
        good = stack.server(1, extra=f"  key_file: {old_key}")
        wrong = stack.server(2, extra=f"  key_file: {new_key}")
        rollover = stack.server(3, extra=f"  key_file: {new_key}\n  previous_key_file: {old_key}")
        source = stack.source("--items", str(ITEMS), "--rate", "200", "--duration", "3")
        wait_for_log(source, "items registered")
        clients = {n: stack.client(n, "--items", ",".join(NAMES), "--duration", "4.5", name=f"client{n}") for n in (1, 2, 3)}
        check(source.wait(15) == 0, "source failed")
        total = sent_updates(source)
        for c in clients.values():
            c.wait(15)
        for p in (good, wrong, rollover):
            p.stop()
        check_full_stream(messages(clients[1]), NAMES, total, ITEMS)
        check_full_stream(messages(clients[3]), NAMES, total, ITEMS)
        data = [m for m in messages(clients[2]) if m["type"] in ("refresh", "update")]
        check(not data, f"a server with the wrong key delivered data: {data[:2]}")
        check(counter(wrong.log_text(), "bad_signatures") > 0, "forged packets not counted")
        check(counter(good.log_text(), "bad_signatures") == 0, "good packets refused")
        check(counter(rollover.log_text(), "bad_signatures") == 0, "the previous key was not accepted")


if __name__ == "__main__":
    run([test_signed_packets_are_required_and_rotated])
