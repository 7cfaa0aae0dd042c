"""Standby publishers on one distributor (docs/operations.md, "Redundancy"): two
mdcast-source processes publish the same service and items to one distributor,
the first with rank 1, the second with rank 2 (both with the operator's
takeover secret). The second is a hot standby: its images are kept at the
distributor, its updates are not sent. kill -9 of the active one: every item
continues on the backbone with the distributor's own sequence, carrying the
standby's values (one refresh where they differ), no status, no gap, no repeat.
The first one back: after the hold-down the items move back to it, once. The
same holds for a server without a cache (the switch is the distributor's).

Two well-behaved clients watch every item: mdcast-client (raw protocol: every
update the next sequence, every message's fields those the source publishes at
some sequence of its own) and the SDK's Consumer (its sequencer drops nothing,
no status)."""
import json
import os
import re
import signal
import subprocess
import time

from harness import (Stack, admin_port, check, json_events, metric, run, sdk_consumer, wait_for_log,
                     wait_until)
from streams import by_item, check_switched_stream, messages
from test_admin_http import get
from test_redundancy import check_sdk_stream, messages_so_far

ITEMS = 20
NAMES = [f"ITEM{i:06d}" for i in range(ITEMS)]
HOLD_DOWN_MS = 1500
SECRET = "standby-secret-0123456789"


class Group:
    """One distributor with sources of rank 1 and 2, one server, an mdcast-client
    and an SDK consumer on every item."""

    def __init__(self, stack, standby_items=ITEMS, server_extra=""):
        self.stack = stack
        self.secret_file = stack.write("takeover.secret", SECRET + "\n")
        self.distributor = stack.distributor(
            extra_publishers=f"  takeover_secret_file: {self.secret_file}\n"
                             f"  standby_hold_down_ms: {HOLD_DOWN_MS}")
        self.server = stack.server(1, extra=server_extra)
        self.sources = {}
        wait_for_log(self.start_source(1), "items registered")
        wait_for_log(self.start_source(2, items=standby_items), "items registered")
        self.wait_switches(0)
        self.client = stack.client(1, "--service", "MDCAST", "--items", ",".join(NAMES),
                                   "--duration", "600")
        self.sdk = sdk_consumer(stack, [1], "--service", "MDCAST", "--items", ",".join(NAMES),
                                "--duration", "600")
        self.wait_updates(NAMES)

    def start_source(self, rank, name=None, items=ITEMS):
        self.sources[rank] = self.stack.source(
            "--items", str(items), "--rate", "400", "--duration", "0", "--standby-rank", str(rank),
            "--takeover-secret-file", self.secret_file, name=name or f"source{rank}")
        return self.sources[rank]

    def switches(self):
        """(reason) of every switch the distributor logged."""
        return re.findall(r"service MDCAST switched from publisher .*? to .*? \((\w+):",
                          self.distributor.log_text())

    def wait_switches(self, count):
        wait_until(lambda: len(self.switches()) >= count, 20, f"{count} switches logged")

    def update_counts(self):
        counts = {}
        for m in messages_so_far(self.client):
            if m["type"] == "update":
                counts[m["item"]] = counts.get(m["item"], 0) + 1
        return counts

    def wait_updates(self, names, more=3):
        """Until every item of `names` got `more` updates more than it had."""
        before = self.update_counts()
        wait_until(lambda: (lambda now: all(now.get(n, 0) >= before.get(n, 0) + more for n in names))(
            self.update_counts()), 30, f"{more} more updates of every item")

    def finish(self, switches, names=NAMES, statuses=0):
        for p in (self.client, self.sdk):
            p.popen.send_signal(signal.SIGINT)
            p.wait(10)
        check_switched_stream(messages(self.client), switches, names)
        check_sdk_stream(json_events(self.sdk), switches, names, statuses)


def check_visible(group, reason, switches):
    """/metrics, /info and mdcastctl status show the group, its active publisher and last switch."""
    port = admin_port(group.distributor)
    check(metric(port, 'mdcast_distributor_standby_publishers{service="MDCAST"}') == 1, "standby count metric")
    check(metric(port, f'mdcast_distributor_standby_switches_total{{reason="{reason}"}}') == 1,
          "switch reason metric")
    code, body = get(port, "/info")
    check(code == 200, f"/info: {code}")
    groups = json.loads(body)["standby_groups"]["groups"]
    check(len(groups) == 1 and groups[0]["service"] == "MDCAST" and groups[0]["switches"] == switches and
          groups[0]["last_switch"]["reason"] == reason and len(groups[0]["members"]) == 2,
          f"/info standby_groups {groups}")
    active = [m for m in groups[0]["members"] if m["active"]]
    check(len(active) == 1 and active[0]["connection"] == groups[0]["active"], f"/info members {groups}")
    check(metric(port, 'mdcast_distributor_standby_active_publisher{service="MDCAST"}') == groups[0]["active"],
          "active publisher metric")
    ctl = subprocess.run([os.environ.get("MDCAST_CTL", "mdcastctl"), "--admin", f"127.0.0.1:{port}", "status"],
                         capture_output=True, text=True, timeout=30)
    check(f"service MDCAST: active publisher connection {groups[0]['active']} " in ctl.stdout and
          f"1 standby, {switches} switches, last " in ctl.stdout and f"({reason})" in ctl.stdout,
          f"mdcastctl status: {ctl.stdout}{ctl.stderr}")
    return active[0]


def test_active_publisher_killed_and_back():
    """kill -9 of the rank 1 source: the rank 2 standby takes over at once; the rank 1
    source back: it is a standby for the hold-down, then active again. One switch each way."""
    with Stack("standby-killed") as stack:
        group = Group(stack)
        check(metric(admin_port(group.distributor), 'mdcast_distributor_standby_publishers{service="MDCAST"}') == 1,
              "no standby before the failure")
        group.sources[1].popen.kill()
        group.wait_switches(1)
        group.wait_updates(NAMES)
        check(group.switches() == ["publisher_gone"], f"switches {group.switches()}")
        # A standby without the operator's secret is refused, as before.
        refused = stack.source("--items", "2", "--duration", "5", "--standby-rank", "3", name="refused")
        check(refused.wait(20) == 1 and "service refused" in refused.log_text(), "a standby without proof joined")
        wait_for_log(group.start_source(1, name="source1-again"), "items registered")
        started = time.monotonic()
        group.wait_switches(2)
        check(time.monotonic() - started >= HOLD_DOWN_MS / 1000 - 0.2, "switched back before the hold-down")
        group.wait_updates(NAMES)
        check(group.switches() == ["publisher_gone", "preferred"], f"switches {group.switches()}")
        active = check_visible(group, "preferred", switches=2)
        check(active["rank"] == 1, f"active member {active}")
        time.sleep(HOLD_DOWN_MS / 1000)  # no more switches while nothing changes
        check(len(group.switches()) == 2, f"switches {group.switches()}")
        group.finish(switches=2)


def test_items_the_standby_lacks_are_told_why():
    """The standby publishes 15 of the 20 items: at the switch the 15 continue with no
    status, the other 5 get one suspect status naming why."""
    with Stack("standby-lacks") as stack:
        group = Group(stack, standby_items=15)
        group.sources[1].popen.kill()
        group.wait_switches(1)
        group.wait_updates(NAMES[:15])
        group.finish(switches=1, names=NAMES[:15], statuses=5)
        items = by_item(messages(group.client))
        for name in NAMES[15:]:
            statuses = [m for m in items[name] if m["type"] == "status"]
            check(len(statuses) == 1 and items[name][-1] is statuses[0], f"{name}: statuses {statuses}")
            check(statuses[0]["data"] == "suspect" and statuses[0]["stream"] == "open" and
                  "(publisher_gone: " in statuses[0]["text"] and
                  statuses[0]["text"].endswith("which does not publish this item"),
                  f"{name}: status {statuses[0]}")
        port = admin_port(group.distributor)
        check(metric(port, "mdcast_distributor_standby_items_without_image_total") == 5, "items without image")


def test_hot_without_the_server_cache():
    """The switch is the distributor's: a server with cache.enable_cache false (which
    switches between two distributors warm, with a suspect status and an image
    request) forwards it as it is, so its clients too see no status and no gap."""
    with Stack("standby-nocache") as stack:
        group = Group(stack, server_extra="cache:\n  enable_cache: false\n")
        group.sources[1].popen.kill()
        group.wait_switches(1)
        group.wait_updates(NAMES)
        group.finish(switches=1)


if __name__ == "__main__":
    run([test_active_publisher_killed_and_back,
         test_items_the_standby_lacks_are_told_why,
         test_hot_without_the_server_cache])
