"""tools/wireshark/mdcast.lua under Debian's tshark: a signed backbone with loss
and repairs, recorded by mdcast-capture, decodes packet for packet as the
capture's own summary counted it (headers, heartbeats, repairs, signatures,
updates, item names, fields by dictionary name); a NAK (with its server id) and a TCP session split
across segments and a padded signed data packet, written here byte by byte,
decode to their fields; hostile values (a decimal exponent of 2^40, a time
before 1970) decode bounded, as the C++ side prints them; a captured book's entries (key,
action, fields by name; its image put back together from its parts) rebuild the book
mdcast-source ended with. Skipped
(77) without tshark."""
import os
import shutil
import struct
import subprocess
import sys
import time
from collections import defaultdict
from decimal import Decimal

from harness import (BIN, LOGIN_REQUEST, SUBSCRIBE, Stack, check, frame, pb_string, run,
                     varint, wait_for_log)
from streams import printed_books

LUA = os.path.join(os.path.dirname(__file__), "../../tools/wireshark/mdcast.lua")
ITEMS = 10
NAMES = [f"ITEM{i:06d}" for i in range(ITEMS)]
FIELDS = ["mdcast.type", "mdcast.sequence", "mdcast.flags.retransmit", "mdcast.flags.signed",
          "mdcast.signature", "mdcast.source", "mdcast.next_sequence", "mdcast.frame.type",
          "mdcast.item_name", "mdcast.item_id", "mdcast.field.ACVOL_1", "mdcast.field.BID"]


def tshark(path, fields, display_filter=None):
    """One dict per packet: field -> list of its values (in the packet's order)."""
    argv = ["tshark", "-X", f"lua_script:{LUA}", "-r", path, "-T", "fields",
            "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=|"]
    if display_filter:
        argv += ["-Y", display_filter]
    for name in fields:
        argv += ["-e", name]
    result = subprocess.run(argv, capture_output=True, timeout=120)
    check(result.returncode == 0, f"tshark failed: {result.stderr.decode()[-2000:]}")
    rows = []
    for line in result.stdout.decode().splitlines():
        values = line.split("\t")
        rows.append({name: (v.split("|") if v else []) for name, v in zip(fields, values)})
    return rows


def signed_lossy_capture(stack):
    key = stack.write("backbone.key", os.urandom(32).hex())
    stack.distributor(extra=f"  key_file: {key}\ntesting:\n  loss:\n    send_rate: 0.05\n    seed: 11")
    stack.server(1, extra=f"  key_file: {key}")  # NAKs what was lost: repairs on the group
    path = os.path.join(stack.dir, "signed.pcap")
    capture = stack.start("capture", [BIN["capture"], "--groups", f"{stack.group}:{stack.backbone_port}",
                                      "--write", path, "--duration", "60"], stdout=True)
    wait_for_log(capture, "writing")
    source = stack.source("--items", str(ITEMS), "--rate", "1000", "--duration", "2")
    check(source.wait(20) == 0, "source failed")
    time.sleep(1)
    capture.stop()
    summary = [m for m in capture.json_lines() if m.get("type") == "capture_summary"]
    check(summary, "no capture summary")
    return path, summary[0]


def test_a_captured_signed_backbone_decodes_as_the_capture_counted_it():
    with Stack("wireshark") as stack:
        path, summary = signed_lossy_capture(stack)
        rows = tshark(path, FIELDS)
        check(len(rows) == summary["packets"], f"{len(rows)} rows for {summary['packets']} packets")
        check(all(r["mdcast.type"] for r in rows), "a packet was not decoded as mdcast")
        check(all(r["mdcast.flags.signed"] == ["1"] and len(r["mdcast.signature"][0]) == 32
                  for r in rows), "a packet without its signature")
        beats = [r for r in rows if r["mdcast.type"] == ["2"]]
        check(len(beats) == summary["heartbeats"] and all(r["mdcast.next_sequence"] for r in beats),
              f"{len(beats)} heartbeats decoded, {summary['heartbeats']} captured")
        repairs = [r for r in rows if r["mdcast.flags.retransmit"] == ["1"]]
        check(len(repairs) == summary["repairs"] > 0, f"{len(repairs)} repairs, {summary['repairs']} captured")
        check_data_packets([r for r in rows if r["mdcast.type"] == ["1"]], summary)


def check_data_packets(rows, summary):
    """First copies only (as the summary counts): updates, item names, fields."""
    seen, updates, names = set(), 0, set()
    volumes = defaultdict(list)
    for r in rows:
        sequence = r["mdcast.sequence"][0]
        if sequence in seen:
            continue
        seen.add(sequence)
        types = r["mdcast.frame.type"]
        updates += types.count("21")
        names.update(r["mdcast.item_name"])
        # Refreshes and updates carry one item id and one ACVOL_1 each (the image's
        # is 0), in message order. A directory (23: the distributor re-sends it once
        # items register) carries neither and may share their packet; packets with
        # other messages (an item status has an id but no ACVOL_1) are left out.
        if not set(types) <= {"20", "21", "23"}:
            continue
        for item, volume in zip(r["mdcast.item_id"], r["mdcast.field.ACVOL_1"]):
            volumes[item].append(int(volume))
    check(updates == summary["updates"], f"{updates} updates decoded, {summary['updates']} captured")
    check(names == set(NAMES), f"item names decoded: {sorted(names)}")
    check(len(volumes) == ITEMS, f"items with ACVOL_1: {len(volumes)}")
    for item, values in volumes.items():
        check(all(v % 10 == 0 for v in values) and len(set(values)) == len(values),
              f"item {item}: ACVOL_1 values {values[:10]} are not the source's 10 x seq")
    check(summary["unfilled"] > 0 or all(sorted(v) == list(range(0, 10 * len(v), 10)) for v in volumes.values()),
          "with every gap filled each item's ACVOL_1 runs 0, 10, 20 ... without a hole")


def pcap_file(path, linktype, packets):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, linktype))  # ns pcap
        for i, data in enumerate(packets):
            f.write(struct.pack("<IIII", 1700000000 + i, 0, len(data), len(data)) + data)


def ipv4(protocol, src, dst, payload):
    header = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0, 0x4000, 64, protocol, 0,
                         bytes(src), bytes(dst))
    return header + payload


def udp(sport, dport, payload):
    return ipv4(17, [127, 0, 0, 1], [127, 0, 0, 1], struct.pack(">HHHH", sport, dport, 8 + len(payload), 0) + payload)


def tcp(sport, dport, seq, payload):
    return ipv4(6, [127, 0, 0, 1], [127, 0, 0, 1],
                struct.pack(">HHIIBBHHH", sport, dport, seq, 1, 0x50, 0x18, 65535, 0, 0) + payload)


def nak_packet(epoch, ranges, server_id):
    body = b"".join(varint(1 << 3 | 2) + varint(len(r)) + r
                    for r in (varint(0x08) + varint(a) + varint(0x10) + varint(b) for a, b in ranges))
    body += varint(2 << 3 | 1) + struct.pack("<Q", server_id)  # fixed64 server_id
    payload = frame(43, body)
    return struct.pack(">IBBHQQHHI", 0x4D444342, 1, 3, 0, epoch, 0, 1, 0, len(payload)) + payload


def padded_signed_data_packet(epoch, payload, signature, padding):
    """A data packet flagged signed and padded, as a segmentation offload run cuts it."""
    header = struct.pack(">IBBHQQHHI", 0x4D444342, 1, 1, 0x6, epoch, 3, 1, 0, len(payload))
    return header + payload + signature + bytes(padding)


def test_a_nak_and_a_split_tcp_session_decode_to_their_fields():
    with Stack("wireshark-nak") as stack:
        path = os.path.join(stack.dir, "handmade.pcap")
        epoch = 7 << 48 | 1234567
        login = frame(LOGIN_REQUEST, pb_string(1, "alice") + pb_string(2, "probe") + varint(5 << 3) + varint(1))
        subscribe = frame(SUBSCRIBE, varint(1 << 3) + varint(9) + pb_string(2, "MDCAST") +
                          pb_string(3, "ITEM000001") + pb_string(3, "ITEM000002"))
        stream = login + subscribe
        cut = len(login) + 5  # the subscribe starts in one segment and ends in the next
        pcap_file(path, 101, [  # LINKTYPE_RAW: bare IPv4
            udp(40000, 41000, nak_packet(epoch, [(5, 9), (12, 13)], 0xfeedfacecafe0001)),
            tcp(45000, 14002, 1, stream[:cut]),
            tcp(45000, 14002, 1 + cut, stream[cut:]),
            udp(40000, 41000, padded_signed_data_packet(epoch, frame(43, b""), bytes(range(16)), 30)),
        ])
        rows = tshark(path, ["mdcast.type", "mdcast.source", "mdcast.frame.type", "mdcast.nak_from",
                             "mdcast.nak_to", "mdcast.asking_server_id", "mdcast.user", "mdcast.protocol_version",
                             "mdcast.service_name", "mdcast.item_name", "mdcast.request_id",
                             "mdcast.flags.padded", "mdcast.signature", "mdcast.padding",
                             "_ws.expert"])
        nak = rows[0]
        check(nak["mdcast.type"] == ["3"] and nak["mdcast.source"] == ["7"], f"NAK header: {nak}")
        check(nak["mdcast.frame.type"] == ["43"], f"NAK message: {nak}")
        check(nak["mdcast.nak_from"] == ["5", "12"] and nak["mdcast.nak_to"] == ["9", "13"],
              f"NAK ranges: {nak}")
        check(nak["mdcast.asking_server_id"] == [str(0xfeedfacecafe0001)], f"NAK server id: {nak}")
        check(rows[1]["mdcast.frame.type"] == ["1"] and rows[1]["mdcast.user"] == ["alice"] and
              rows[1]["mdcast.protocol_version"] == ["1"], f"login: {rows[1]}")
        check(rows[2]["mdcast.frame.type"] == ["31"] and rows[2]["mdcast.service_name"] == ["MDCAST"] and
              rows[2]["mdcast.item_name"] == ["ITEM000001", "ITEM000002"] and
              rows[2]["mdcast.request_id"] == ["9"], f"subscribe across two segments: {rows[2]}")
        padded = rows[3]
        check(padded["mdcast.flags.padded"] == ["1"] and padded["mdcast.frame.type"] == ["43"] and
              padded["mdcast.signature"] == [bytes(range(16)).hex()] and
              padded["mdcast.padding"] == ["00" * 30] and not padded["_ws.expert"],
              f"padded signed data packet: {padded}")


def pb_bytes(field, data):
    return varint(field << 3 | 2) + varint(len(data)) + data


def decimal_field(field_id, mantissa, exponent):
    zigzag = lambda n: (n << 1) if n >= 0 else ((-n << 1) - 1)  # noqa: E731
    decimal = varint(1 << 3) + varint(zigzag(mantissa)) + varint(2 << 3) + varint(zigzag(exponent))
    return pb_bytes(1, varint(1 << 3) + varint(field_id) + pb_bytes(3, decimal))


def time_field(field_id, ns):
    return pb_bytes(1, varint(1 << 3) + varint(field_id) + varint(6 << 3 | 1) + struct.pack("<q", ns))


def test_hostile_values_decode_bounded():
    """One refresh whose BID has exponent 2^40, one with -2^40 (each made tshark allocate
    without bound: 1 GB, or abort), and times of +-2^62 ns: decoded within seconds, the exponent
    clamped to +-30 as proto/field_values.cpp does, a time before 1970 shown in nanoseconds."""
    with Stack("wireshark-hostile") as stack:
        path = os.path.join(stack.dir, "hostile.pcap")
        packets, seq = [], 1
        for fields in (decimal_field(22, 12345, 1 << 40), decimal_field(22, 12345, -(1 << 40)),
                       time_field(22, 1 << 62) + time_field(22, -(1 << 62))):
            refresh = frame(20, varint(1 << 3) + varint(7) + pb_string(7, "ITEM000001") +
                        pb_bytes(9, fields))
            packets.append(tcp(14002, 45000, seq, refresh))
            seq += len(refresh)
        pcap_file(path, 101, packets)
        started = time.monotonic()
        rows = tshark(path, ["mdcast.item_name", "mdcast.field.BID"])
        check(time.monotonic() - started < 60, "tshark took too long")
        check([r["mdcast.item_name"] for r in rows] == [["ITEM000001"]] * 3, f"items: {rows}")
        check(rows[0]["mdcast.field.BID"] == ["12345" + "0" * 30], f"exponent 2^40: {rows[0]}")
        check(rows[1]["mdcast.field.BID"] == ["0." + "0" * 25 + "12345"], f"exponent -2^40: {rows[1]}")
        check(rows[2]["mdcast.field.BID"] == ["2116-02-20T23:53:38.427387904Z", str(-(1 << 62))],
              f"far-off times: {rows[2]}")


def book_from_rows(rows):
    """Rebuilds one book from tshark's rows, in packet order: a refresh clears it; each entry
    (key, action) takes its fields in order (an add ORDER_SIDE, ORDER_SIZE and NO_ORD, an update
    ORDER_SIZE and NO_ORD, a delete none)."""
    book, actions = {}, set()
    for row in rows:
        kinds = [kind for kind in row["mdcast.frame.type"] if kind != "47"]  # less the parts
        if "20" in kinds:
            check(kinds[0] == "20", f"a refresh after updates in one packet: {row}")
            book = {}
        sides, sizes, orders = (iter(row[f"mdcast.field.{n}"]) for n in ("ORDER_SIDE", "ORDER_SIZE", "NO_ORD"))
        check(len(row["mdcast.entry.key"]) == len(row["mdcast.entry.action"]), f"entries: {row}")
        for key, action in zip(row["mdcast.entry.key"], row["mdcast.entry.action"]):
            price = Decimal(key)
            actions.add(action)
            if action == "1":
                book[price] = {"ORDER_SIDE": int(next(sides))}
            if action in ("1", "2"):
                book.setdefault(price, {}).update(ORDER_SIZE=int(next(sizes)), NO_ORD=int(next(orders)))
            elif action == "3":
                book.pop(price, None)
        check(next(sides, None) is None and next(sizes, None) is None, f"fields beyond the entries: {row}")
    return book, actions


def test_a_captured_book_decodes_entry_by_entry():
    """mdcast-source --books 1 captured (no server: the book's refresh, then its updates, each
    sent once); tshark's entries (key, action, fields by name) rebuild the source's final book.
    Its refresh of 150 levels (about 3 kB) is sent in parts: the dissector puts it back together."""
    with Stack("wireshark-book") as stack:
        stack.distributor()
        path = os.path.join(stack.dir, "book.pcap")
        capture = stack.start("capture", [BIN["capture"], "--groups", f"{stack.group}:{stack.backbone_port}",
                                          "--write", path, "--duration", "60"], stdout=True)
        wait_for_log(capture, "writing")
        source = stack.source("--items", "0", "--books", "1", "--book-levels", "150", "--rate", "200",
                              "--duration", "1.5", "--print-books", stdout=True)
        check(source.wait(20) == 0, "source failed")
        time.sleep(0.5)
        capture.stop()
        printed = printed_books(source)["BOOK000000"][0]
        names = ["mdcast.frame.type", "mdcast.item_name", "mdcast.domain", "mdcast.entry.key",
                 "mdcast.entry.action", "mdcast.field.ORDER_SIDE", "mdcast.field.ORDER_SIZE",
                 "mdcast.field.NO_ORD"]
        rows = tshark(path, names, "mdcast.entry")
        check(rows and rows[0]["mdcast.item_name"] == ["BOOK000000"] and rows[0]["mdcast.domain"] == ["1"],
              f"the first packet with entries is not the book's refresh: {rows[:1]}")
        check(len(rows[0]["mdcast.entry.key"]) == 150 and "47" in rows[0]["mdcast.frame.type"],
              f"the refresh is not put back together from its parts: {rows[0]}")
        book, actions = book_from_rows(rows)
        check(actions == {"1", "2", "3"}, f"actions decoded: {actions}")
        check(book == printed, f"tshark's book {book} is not the source's {printed}")


if __name__ == "__main__":
    if shutil.which("tshark") is None:
        print("SKIP: tshark is not installed (apt-get install tshark; deploy/setup.sh test packages)")
        sys.exit(77)
    run([test_a_captured_signed_backbone_decodes_as_the_capture_counted_it,
         test_a_nak_and_a_split_tcp_session_decode_to_their_fields,
         test_hostile_values_decode_bounded, test_a_captured_book_decodes_entry_by_entry])
