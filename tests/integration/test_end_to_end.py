"""End to end through the four real binaries: source -> distributor ->
multicast -> server -> client. Checks that a client receives each item's image
and then every update, in order, with the values the source published, and
that failures (source gone, distributor restart, unknown item) reach it as
status rather than silence."""
import json
import re
from decimal import Decimal

from harness import Stack, check, run, wait_for_log

ITEMS = 10


def bid(index, seq):
    return Decimal(10000 + 100 * index + seq % 1000).scaleb(-2)


def expected_fields(index, seq):
    return {"BID": bid(index, seq), "ASK": bid(index, seq) + Decimal("0.05"),
            "BIDSIZE": 100 + seq % 50, "ASKSIZE": 200 + seq % 50, "ACVOL_1": 10 * seq}


def messages(client):
    with open(client.stdout_path) as f:
        return [json.loads(line, parse_float=Decimal) for line in f if line.strip()]


def by_item(lines):
    items = {}
    for m in lines:
        if m["type"] in ("refresh", "update", "status"):
            items.setdefault(m["item"], []).append(m)
    return items


def sent_updates(source):
    match = re.search(r"sent (\d+) updates", source.log_text())
    check(match, "source did not report what it sent")
    return int(match.group(1))


def final_seq(index, total):
    return total // ITEMS + (1 if index < total % ITEMS else 0)


def check_full_stream(lines, names, total, view=None):
    items = by_item(lines)
    for name in names:
        index = int(name[4:])
        got = items.get(name, [])
        check(got and got[0]["type"] == "refresh", f"{name}: first message is not a refresh: {got[:1]}")
        refresh = got[0]
        check(refresh["data"] == "ok" and refresh["stream"] == "open", f"{name}: refresh state {refresh}")
        want = expected_fields(index, refresh["seq"])
        if view:
            want = {k: v for k, v in want.items() if k in view}
            check(set(refresh["fields"]) == set(view), f"{name}: view refresh fields {refresh['fields']}")
        for key, value in want.items():
            check(refresh["fields"][key] == value, f"{name}: refresh {key}={refresh['fields'][key]} want {value}")
        seq = refresh["seq"]
        updates = [m for m in got if m["type"] == "update"]
        for u in updates:
            check(u["seq"] == seq + 1, f"{name}: update seq {u['seq']} after {seq}")
            seq = u["seq"]
            want = expected_fields(index, seq)
            if view:
                want = {k: v for k, v in want.items() if k in view}
            check(u["fields"] == want, f"{name}: update {seq} fields {u['fields']} want {want}")
            check(u["latency_ns"] >= 0, f"{name}: update without publish stamp")
        check(seq == final_seq(index, total), f"{name}: last seq {seq}, source sent up to {final_seq(index, total)}")
        statuses = [m for m in got if m["type"] == "status"]
        check(statuses and statuses[-1]["code"] == "SOURCE_DOWN" and statuses[-1]["data"] == "suspect",
              f"{name}: no SOURCE_DOWN status after the source left: {statuses}")
        check(got[-1]["type"] == "status", f"{name}: data after the final status")
    summary = [m for m in lines if m["type"] == "summary"][-1]
    check(summary["gaps"] == 0 and summary["duplicates"] == 0, f"summary {summary}")


def test_image_then_every_update_in_order():
    with Stack("e2e") as stack:
        stack.distributor()
        stack.server(1)
        source = stack.source("--items", str(ITEMS), "--rate", "400", "--duration", "3")
        wait_for_log(source, "items registered")
        names = ["ITEM000001", "ITEM000004", "ITEM000009"]
        full = stack.client(1, "--items", ",".join(names), "--duration", "5", name="full")
        view = stack.client(1, "--items", ",".join(names), "--view", "BID,ASK", "--duration", "5", name="view")
        snap = stack.client(1, "--items", ",".join(names), "--snapshot", "--duration", "2", name="snapshot")
        # A server that joins while the source is publishing gets images from the distributor.
        stack.server(2)
        late = stack.client(2, "--items", ",".join(names), "--duration", "4", name="late")
        check(source.wait(15) == 0, "source failed")
        total = sent_updates(source)
        for client in (full, view, snap, late):
            check(client.wait(15) == 0, f"{client.name} exit code")
        check_full_stream(messages(full), names, total)
        check_full_stream(messages(view), names, total, view={"BID", "ASK"})
        check_full_stream(messages(late), names, total)
        snapshot_lines = [m for m in messages(snap) if m["type"] in ("refresh", "update")]
        check(len(snapshot_lines) == len(names) and all(m["type"] == "refresh" and m["stream"] == "closed"
                                                        for m in snapshot_lines),
              f"snapshot: {snapshot_lines}")


def test_unknown_item_is_closed_not_found():
    with Stack("notfound") as stack:
        stack.distributor()
        stack.server(1)
        source = stack.source("--items", "2", "--rate", "10", "--duration", "2")
        wait_for_log(source, "items registered")
        client = stack.client(1, "--items", "NO_SUCH_ITEM", "--service", "MDCAST", "--duration", "1.5")
        other = stack.client(1, "--items", "X", "--service", "NO_SUCH_SERVICE", "--duration", "1.5", name="nosvc")
        check(client.wait(10) == 0 and other.wait(10) == 0, "client exit code")
        for c, text in ((client, "no such item"), (other, "no such service")):
            statuses = [m for m in messages(c) if m["type"] == "status"]
            check(len(statuses) == 1 and statuses[0]["stream"] == "closed" and statuses[0]["code"] == "NOT_FOUND"
                  and statuses[0]["text"] == text, f"{c.name}: {statuses}")


def test_distributor_restart_is_visible_then_recovers():
    with Stack("restart") as stack:
        first = stack.distributor()
        stack.server(1)
        source = stack.source("--items", str(ITEMS), "--rate", "200", "--duration", "20", name="source1")
        wait_for_log(source, "items registered")
        client = stack.client(1, "--items", "ITEM000002", "--duration", "6")
        wait_for_log(stack.processes[1], "logged in")
        first.stop()
        source.wait(10)  # it loses its distributor and exits
        stack.processes.remove(first)
        stack.distributor()
        source2 = stack.source("--items", str(ITEMS), "--rate", "200", "--duration", "3", name="source2")
        check(source2.wait(15) == 0, "second source failed")
        check(client.wait(15) == 0, "client exit code")
        got = by_item(messages(client))["ITEM000002"]
        kinds = [(m["type"], m.get("code")) for m in got]
        reset_at = next((i for i, m in enumerate(got) if m["type"] == "status" and m["data"] == "suspect"), None)
        check(reset_at is not None, f"no suspect status when the distributor went away: {kinds[:5]}...")
        after = got[reset_at:]
        refresh_at = next((i for i, m in enumerate(after) if m["type"] == "refresh"), None)
        check(refresh_at is not None, f"no fresh image after the restart: {[(m['type'], m.get('code')) for m in after]}")
        check(after[refresh_at]["clear_cache"] and after[refresh_at]["data"] == "ok", f"{after[refresh_at]}")
        updates = [m for m in after[refresh_at:] if m["type"] == "update"]
        check(updates, "no updates after the fresh image")
        seq = after[refresh_at]["seq"]
        for u in updates:
            check(u["seq"] == seq + 1, f"update seq {u['seq']} after {seq}")
            seq = u["seq"]
        check(any(m["type"] == "update" for m in got[:reset_at]), "no updates before the restart")
        check(all(m["type"] != "update" for m in after[:refresh_at]), "update shown as current before the fresh image")


if __name__ == "__main__":
    run([test_image_then_every_update_in_order, test_unknown_item_is_closed_not_found,
         test_distributor_restart_is_visible_then_recovers])
