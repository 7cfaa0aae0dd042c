"""Checks on what mdcast-client printed (JSON lines) against what mdcast-source
published: its values are a pure function of item index and sequence
(tools/sample_items.h), so every field of every message can be verified."""
import json
import re
import time
from decimal import Decimal

from harness import check


def bid(index, seq):
    return Decimal(10000 + 100 * index + seq % 1000).scaleb(-2)


def expected_fields(index, seq):
    return {"BID": bid(index, seq), "ASK": bid(index, seq) + Decimal("0.05"),
            "BIDSIZE": 100 + seq % 50, "ASKSIZE": 200 + seq % 50, "ACVOL_1": 10 * seq}


def messages(client):
    with open(client.stdout_path) as f:
        return [json.loads(line, parse_float=Decimal) for line in f if line.strip()]


def wait_for_update(client, name, timeout=15):
    """Until the client has printed an update of `name` (complete lines only)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(client.stdout_path) as f:
            lines = f.read().split("\n")[:-1]  # the last piece may be half written
        for line in lines:
            if line.strip() and '"type":"update"' in line and f'"{name}"' in line:
                return
        time.sleep(0.05)
    raise AssertionError(f"{client.name}: no update of {name} within {timeout} s")


def by_item(lines):
    items = {}
    for m in lines:
        if m["type"] in ("refresh", "update", "status"):
            items.setdefault(m["item"], []).append(m)
    return items


def source_seq(index, fields, expected=expected_fields, seq_of=lambda f: int(f["ACVOL_1"]) // 10):
    """The source's own sequence the fields were published at (mdcast-source's ACVOL_1 is
    10 * it), checked against every field it publishes (a refresh carries more)."""
    seq = seq_of(fields)
    want = expected(index, seq)
    check({key: fields.get(key) for key in want} == want, f"fields {fields} are not the source's at {seq}")
    return seq


def check_switched_stream(lines, switches, names, expected=expected_fields,
                          seq_of=lambda f: int(f["ACVOL_1"]) // 10):
    """A stream that redundancy moved between sources `switches` times (docs/operations.md,
    "Redundancy"). Per item: no status, at most 1 + `switches` refreshes (data ok), every
    update the next sequence of the item id of the refresh before it, every message's values
    a source's at some sequence of its own, the offset between the two changing at most once
    per switch; no gap and no duplicate in the client's summary."""
    items = by_item(lines)
    for name in names:
        index = int(name[4:])
        got = items.get(name, [])
        check(got and got[0]["type"] == "refresh", f"{name}: first message {got[:1]}")
        statuses = [m for m in got if m["type"] == "status"]
        check(not statuses, f"{name}: statuses reached the client: {statuses[:3]}")
        refreshes = [m for m in got if m["type"] == "refresh"]
        check(len(refreshes) <= 1 + switches, f"{name}: {len(refreshes)} refreshes for {switches} switches")
        seq, item_id, shift, shifts = None, None, None, 0
        for m in got:
            own = source_seq(index, m["fields"], expected, seq_of)
            if m["type"] == "refresh":
                check(m["data"] == "ok" and m["stream"] == "open", f"{name}: refresh {m}")
                shifts += shift is not None and m["seq"] - own != shift
                item_id = m["id"]
            else:
                check(m["id"] == item_id, f"{name}: update of item id {m['id']} after the refresh of {item_id}")
                check(m["seq"] == seq + 1, f"{name}: update seq {m['seq']} after {seq}")
                shifts += m["seq"] - own != shift
            seq, shift = m["seq"], m["seq"] - own
        check(shifts <= switches, f"{name}: the values moved to another source {shifts} times")
    summary = [m for m in lines if m["type"] == "summary"][-1]
    check(summary["gaps"] == 0 and summary["duplicates"] == 0, f"summary {summary}")


def sent_updates(source):
    match = re.search(r"sent (\d+) updates", source.log_text())
    check(match, "source did not report what it sent")
    return int(match.group(1))


def final_seq(index, total, item_count):
    return total // item_count + (1 if index < total % item_count else 0)


def check_full_stream(lines, names, total, item_count, view=None, only_final_status=False):
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
        check(seq == final_seq(index, total, item_count), f"{name}: last seq {seq}, source sent up to {final_seq(index, total, item_count)}")
        statuses = [m for m in got if m["type"] == "status"]
        check(statuses and statuses[-1]["code"] == "SOURCE_DOWN" and statuses[-1]["data"] == "suspect",
              f"{name}: no SOURCE_DOWN status after the source left: {statuses}")
        check(got[-1]["type"] == "status", f"{name}: data after the final status")
        if only_final_status:
            check(len(statuses) == 1, f"{name}: loss reached the client as status: {statuses[:-1]}")
    summary = [m for m in lines if m["type"] == "summary"][-1]
    check(summary["gaps"] == 0 and summary["duplicates"] == 0, f"summary {summary}")


def books_of(lines):
    """Per item: the book a client's refreshes and updates build (JSON lines of
    mdcast-client: `entries` with key, action and fields), as {Decimal price: fields}
    for MarketByPrice, {name: fields} otherwise; also the last sequence applied."""
    books, seqs = {}, {}
    for m in lines:
        if m["type"] == "refresh" and "entries" in m:
            books[m["item"]] = {}
        elif m["type"] != "update" or "entries" not in m:
            continue
        book = books.setdefault(m["item"], {})
        seqs[m["item"]] = m["seq"]
        for entry in m["entries"]:
            apply_entry(book, entry)
    return books, seqs


def apply_entry(book, entry):
    """One action of docs/books.md: add replaces, update merges (adds when absent),
    delete removes (nothing when absent)."""
    key = book_key(entry["key"])
    if entry["action"] == "add":
        book[key] = dict(entry["fields"])
    elif entry["action"] == "update":
        book.setdefault(key, {}).update(entry["fields"])
    elif entry["action"] == "delete":
        check(not entry["fields"], f"a delete with fields: {entry}")
        book.pop(key, None)
    else:
        raise AssertionError(f"unknown action {entry}")


def book_key(text):
    try:
        return Decimal(text)
    except ArithmeticError:
        return text


def printed_books(source):
    """mdcast-source --print-books: item -> (book as books_of builds it, last seq)."""
    out = {}
    for m in source.json_lines():
        if m.get("type") == "book":
            out[m["item"]] = ({book_key(e["key"]): e["fields"] for e in m["entries"]}, m["seq"])
    return out
