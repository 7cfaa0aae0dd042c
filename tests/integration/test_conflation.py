"""Per-request conflation (Subscribe.conflate_ms) end to end: mdcast-source
publishes 500 updates/s per item; SDK consumers (sdk-consumer-probe, through
Consumer::subscribe's conflate_ms) subscribe with 100 ms, 1000 ms and no
interval. The 100 ms one gets at most 10 updates/s per item, each carrying the
latest values (ACVOL_1 = 10 x sequence, BID from the sequence, as published);
when the source dies the SOURCE_DOWN status reaches the 1000 ms one at once,
after the updates it was owed, and the server refuses an interval above the
limit."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import check  # noqa: E402

ITEMS = ["ITEM000000", "ITEM000001"]


def check_latest_values(events, item, index):
    for e in events:
        if e["event"] in ("refresh", "update") and e["item"] == item:
            seq = e["seq"]
            check(int(e["fields"]["32"]) == 10 * seq, f"{item}: ACVOL_1 {e['fields']['32']} at {seq}")
            bid = round(float(e["fields"]["22"]) * 100)
            check(bid == 10000 + 100 * index + seq % 1000, f"{item}: BID {e['fields']['22']} at {seq}")


def updates_before_status(events, item):
    out = []
    for e in events:
        if e.get("item") != item:
            continue
        if e["event"] == "status":
            return out, e
        if e["event"] == "update":
            out.append(e)
    raise AssertionError(f"{item}: no status in {events[-5:]}")


def start_stack(stack, items, rate):
    """Distributor, server 1 and a broadcast source whose items are imaged."""
    stack.distributor()
    stack.server(1)
    source = stack.source("--items", str(items), "--rate", str(rate), "--duration", "30")
    harness.wait_for_log(source, "items registered")
    return source


def test_interval_caps_the_rate_keeps_the_latest_values_and_passes_statuses():
    with harness.Stack("conflation") as stack:
        source = start_stack(stack, 2, 1000)
        args = ("--service", "MDCAST", "--items", ",".join(ITEMS), "--duration", "20")
        paced = harness.sdk_consumer(stack, [1], *args, "--conflate-ms", "100", name="paced")
        slow = harness.sdk_consumer(stack, [1], *args, "--conflate-ms", "1000", name="slow")
        every = harness.sdk_consumer(stack, [1], *args, name="every")
        for consumer in (paced, slow, every):
            harness.wait_for_events(consumer, lambda ev: sum(e["event"] == "refresh" for e in ev) == 2)
        time.sleep(4)
        source.popen.kill()
        source.popen.wait()
        for consumer in (paced, slow, every):
            harness.wait_for_events(consumer, lambda ev: sum(e["event"] == "status" for e in ev) == 2,
                                    10, "SOURCE_DOWN for both items")
        events = {c.name: harness.json_events(c) for c in (paced, slow, every)}
        for index, item in enumerate(ITEMS):
            plain, plain_status = updates_before_status(events["every"], item)
            check(len(plain) > 1500, f"{item}: the plain subscriber got only {len(plain)} updates")
            # At most one update per 100 ms, measured over the whole stream.
            got, status = updates_before_status(events["paced"], item)
            span_s = (status["t"] - got[0]["t"]) / 1e9
            check(len(got) <= 10 * span_s + 2, f"{item}: {len(got)} updates in {span_s:.2f} s at 100 ms")
            check(len(got) >= 4 * span_s, f"{item}: only {len(got)} updates in {span_s:.2f} s at 100 ms")
            check(sum(e["conflated"] for e in got) >= len(got) / 2, f"{item}: few conflated updates")
            check_latest_values(events["paced"], item, index)
            # Nothing owed is lost: the last update before the status is the last one published.
            check(got[-1]["seq"] == plain[-1]["seq"], f"{item}: paced ends at {got[-1]['seq']}, "
                  f"the source at {plain[-1]['seq']}")
            # The status does not wait for the 1000 ms interval, and follows what was owed.
            owed, slow_status = updates_before_status(events["slow"], item)
            check(slow_status["code"] == "SOURCE_DOWN" and status["code"] == "SOURCE_DOWN", f"{slow_status}")
            late_ms = (slow_status["t"] - plain_status["t"]) / 1e6
            check(late_ms < 300, f"{item}: the status came {late_ms:.0f} ms after the plain subscriber's")
            check(owed[-1]["seq"] == plain[-1]["seq"], f"{item}: 1000 ms subscriber ends at {owed[-1]['seq']}")
            check_latest_values(events["slow"], item, index)


def test_an_interval_above_the_limit_is_refused():
    with harness.Stack("conflation-limit") as stack:
        start_stack(stack, 1, 10)
        client = stack.client(1, "--items", "ITEM000000", "--duration", "3", "--conflate-ms", "60000")
        check(client.wait(timeout=15) == 0, client.log_text()[-2000:])
        check(any(m["type"] == "refresh" for m in client.json_lines()), "60000 ms is allowed")
        # mdcast-client refuses more itself; the raw protocol shows the server's answer.
        sock = harness.socket.create_connection(("127.0.0.1", stack.client_ports[1]), timeout=5)
        sock.sendall(harness.login_frame())
        body = harness.pb_string(2, "MDCAST") + harness.pb_string(3, "ITEM000000") + bytes([6 << 3]) + \
            harness.varint(60001)
        sock.sendall(harness.frame(31, body))
        frames = harness.read_frames_until_close(sock, timeout=2)
        sock.close()
        texts = [f for f in frames if b"conflate_ms 60001 is above the limit" in f[1]]
        check(texts, f"no refusal naming the limit in {frames}")


if __name__ == "__main__":
    harness.run([test_interval_caps_the_rate_keeps_the_latest_values_and_passes_statuses,
                 test_an_interval_above_the_limit_is_refused])
