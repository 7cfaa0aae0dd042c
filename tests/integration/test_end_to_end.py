"""End to end through the four real binaries: source -> distributor ->
multicast -> server -> client. Checks that a client receives each item's image
and then every update, in order, with the values the source published, and
that failures (source gone, distributor restart, unknown item) reach it as
status rather than silence."""
import re

from harness import Stack, check, run, wait_for_log
from streams import by_item, check_full_stream, messages, sent_updates, wait_for_update

ITEMS = 10


def test_image_then_every_update_in_order():
    with Stack("e2e") as stack:
        stack.distributor()
        first = stack.server(1)
        source = stack.source("--items", str(ITEMS), "--rate", "400", "--duration", "3")
        wait_for_log(source, "items registered")
        # Until a server has the distributor's directory it answers "no source yet" (a status
        # before the image), which this test does not expect.
        wait_for_log(first, "service MDCAST (")
        names = ["ITEM000001", "ITEM000004", "ITEM000009"]
        full = stack.client(1, "--items", ",".join(names), "--duration", "5", name="full")
        view = stack.client(1, "--items", ",".join(names), "--view", "BID,ASK", "--duration", "5", name="view")
        snap = stack.client(1, "--items", ",".join(names), "--snapshot", "--duration", "2", name="snapshot")
        # A server that joins while the source is publishing gets images from the distributor.
        wait_for_log(stack.server(2), "service MDCAST (")
        late = stack.client(2, "--items", ",".join(names), "--duration", "4", name="late")
        check(source.wait(15) == 0, "source failed")
        total = sent_updates(source)
        for client in (full, view, snap, late):
            check(client.wait(15) == 0, f"{client.name} exit code")
        check_full_stream(messages(full), names, total, ITEMS)
        check_full_stream(messages(view), names, total, ITEMS, view={"BID", "ASK"})
        check_full_stream(messages(late), names, total, ITEMS)
        snapshot_lines = [m for m in messages(snap) if m["type"] in ("refresh", "update")]
        check(len(snapshot_lines) == len(names) and all(m["type"] == "refresh" and m["stream"] == "closed"
                                                        for m in snapshot_lines),
              f"snapshot: {snapshot_lines}")


def test_cache_off_gives_the_same_data():
    with Stack("cacheoff") as stack:
        stack.distributor()
        cache_on = stack.server(1)
        cache_off = stack.server(2, extra="cache:\n  enable_cache: false")
        source = stack.source("--items", str(ITEMS), "--rate", "400", "--duration", "3")
        wait_for_log(source, "items registered")
        for server in (cache_on, cache_off):
            wait_for_log(server, "service MDCAST (")
        names = ["ITEM000002", "ITEM000005", "ITEM000007"]
        on = stack.client(1, "--items", ",".join(names), "--duration", "5", name="cache_on")
        off = stack.client(2, "--items", ",".join(names), "--duration", "5", name="cache_off")
        view = stack.client(2, "--items", ",".join(names), "--view", "BID,ASK", "--duration", "5", name="off_view")
        snap = stack.client(2, "--items", ",".join(names), "--snapshot", "--duration", "2", name="off_snapshot")
        check(source.wait(15) == 0, "source failed")
        total = sent_updates(source)
        for client in (on, off, view, snap):
            check(client.wait(15) == 0, f"{client.name} exit code")
        check_full_stream(messages(on), names, total, ITEMS)
        check_full_stream(messages(off), names, total, ITEMS)
        check_full_stream(messages(view), names, total, ITEMS, view={"BID", "ASK"})
        snapshot_lines = [m for m in messages(snap) if m["type"] in ("refresh", "update")]
        check(len(snapshot_lines) == len(names) and all(m["type"] == "refresh" and m["stream"] == "closed"
                                                        for m in snapshot_lines), f"snapshot: {snapshot_lines}")
        cache_off.stop()
        check(re.findall(r"\bitems=(\d+)", cache_off.log_text()), "no counters from the cache-off server")


def test_unknown_item_is_closed_not_found():
    with Stack("notfound") as stack:
        stack.distributor()
        server = stack.server(1)
        source = stack.source("--items", "2", "--rate", "10", "--duration", "2")
        wait_for_log(source, "items registered")
        wait_for_log(server, "service MDCAST (")  # before it, an unknown item waits for a source
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
        wait_for_update(client, "ITEM000002")  # the stream ran before the restart
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
    run([test_image_then_every_update_in_order, test_cache_off_gives_the_same_data,
         test_unknown_item_is_closed_not_found,
         test_distributor_restart_is_visible_then_recovers])
