"""mdcast-source --interactive (sink-driven) against the real stack: it answers
only the items subscribers ask for, with the sample values and the item file's
templates, a closed NOT_FOUND for a name it does not have, and spreads its rate
over the requested items only."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from harness import BIN, ETC, Stack, check, run, wait_for_log  # noqa: E402


def source_summary(source):
    for line in source.log_text().splitlines():
        if line.startswith('{"type":"source_summary"'):
            return json.loads(line)
    raise AssertionError(f"no source summary in:\n{source.log_text()[-3000:]}")


def bid_ok(value, index, seq):
    """BID of sample item `index` at `seq` (tools/sample_items.h)."""
    return round(float(value) * 100) == 10000 + 100 * index + seq % 1000


def test_answers_only_requested_items_and_spreads_the_rate():
    rate, seconds = 400, 4
    with Stack("interactive-source") as stack:
        stack.distributor()
        stack.server(1)
        source = stack.source("--interactive", "--items", "100", "--rate", str(rate), "--duration",
                              str(seconds + 4), "--service", "ONDEMAND")
        wait_for_log(source, "announced as interactive")
        client = stack.client(1, "--service", "ONDEMAND", "--items", "ITEM000003,ITEM000042,NOPE",
                              "--duration", str(seconds))
        check(client.wait(timeout=seconds + 15) == 0, f"client failed:\n{client.log_text()[-2000:]}")
        check(source.wait(timeout=20) == 0, f"source failed:\n{source.log_text()[-2000:]}")
        messages = client.json_lines()
        refreshes = {m["item"]: m for m in messages if m["type"] == "refresh"}
        check(sorted(refreshes) == ["ITEM000003", "ITEM000042"], f"images for {sorted(refreshes)}")
        for name, index in (("ITEM000003", 3), ("ITEM000042", 42)):
            image = refreshes[name]
            check(image["fields"]["DSPLY_NAME"] == name and bid_ok(image["fields"]["BID"], index, image["seq"]),
                  f"{name} image: {image}")
        updates = [m for m in messages if m["type"] == "update"]
        check({m["item"] for m in updates} == {"ITEM000003", "ITEM000042"},
              f"updates for {sorted({m['item'] for m in updates})}")
        for m in updates:
            index = int(m["item"][4:])
            check(bid_ok(m["fields"]["BID"], index, m["seq"]), f"update values: {m}")
        missing = [m for m in messages if m["type"] == "status" and m["item"] == "NOPE"]
        check(missing and missing[0]["code"] == "NOT_FOUND" and missing[0]["stream"] == "closed", f"{missing}")
        summary = [m for m in messages if m["type"] == "summary"][-1]
        check(summary["gaps"] == 0 and summary["duplicates"] == 0, f"client {summary}")
        # The whole rate goes to the two requested items, half each.
        per_item = {name: sum(1 for m in updates if m["item"] == name) for name in refreshes}
        for name, count in per_item.items():
            check(abs(count - rate / 2 * seconds) <= 0.25 * rate / 2 * seconds, f"{name}: {count} updates")
        sent = source_summary(source)
        check(sent["mode"] == "interactive" and sent["requests"] == 2 and sent["open_items"] == 2, f"{sent}")
        check(sent["sent"] >= len(updates), f"source sent {sent['sent']}, client got {len(updates)}")


def test_item_file_templates_in_the_images():
    with Stack("interactive-file") as stack:
        stack.distributor()
        stack.server(1)
        source = stack.source("--interactive", "--item-file", os.path.join(ETC, "samples/items.yaml"),
                              "--rate", "50", "--duration", "8")
        wait_for_log(source, "announced as interactive")
        items = [line.split("name:")[1].strip() for line in open(os.path.join(ETC, "samples/items.yaml"))
                 if line.startswith("  - name:")]
        client = stack.client(1, "--items", items[0], "--snapshot", "--duration", "5")
        check(client.wait(timeout=15) == 0, f"client failed:\n{client.log_text()[-2000:]}")
        images = [m for m in client.json_lines() if m["type"] == "refresh"]
        check(len(images) == 1 and images[0]["item"] == items[0], f"{images}")
        check(images[0]["fields"].get("HST_CLOSE") == 131.25 and images[0]["fields"]["DSPLY_NAME"] == "IBM.N",
              f"the item file's fields are not in {images[0]}")
        source.stop()


if __name__ == "__main__":
    run([test_answers_only_requested_items_and_spreads_the_rate, test_item_file_templates_in_the_images])
