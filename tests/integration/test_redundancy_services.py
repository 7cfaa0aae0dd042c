"""Redundancy with more than one service (docs/operations.md, "Redundancy"): a group
is per service, so a switch moves only that service's items.

Distributor 1 carries two services, MDCAST (items ITEM*) and OTHR (items OTHR*, a
service nobody else publishes); distributor 2 carries MDCAST only. The server thus
has one redundancy group (MDCAST) and one lone service. A client on each service
checks every value and sequence:

1. MDCAST's publisher on distributor 1 is killed: MDCAST's items move to
   distributor 2 (one refresh each, no status); OTHR's items see nothing at all,
   their updates go on in sequence from distributor 1.
2. Distributor 1 is killed: OTHR has no standby, so each of its items gets one
   suspect status naming why and stays suspect (never shown ok again); MDCAST's
   items, already on distributor 2, see nothing."""
import asyncio
import json
import os
import signal
import subprocess
import time

from harness import (BIN, Stack, admin_port, check, free_port, json_events, metric, run, sdk_consumer,
                     wait_for_log, wait_until)
from streams import by_item, messages
from test_admin_http import get
from test_redundancy import ITEMS, NAMES, Pair, check_raw_stream, messages_so_far, switch_lines
from ws_client import connect, login, receive, ws_section

OTHER = "OTHR"
OTHER_NAMES = [f"{OTHER}{i:06d}" for i in range(ITEMS)]


def start_other_source(pair):
    source = pair.stack.start("source-other", [
        BIN["source"], "--distributor", f"127.0.0.1:{pair.ports[1]}", "--service", OTHER,
        "--item-prefix", OTHER, "--items", str(ITEMS), "--rate", "400", "--duration", "0"])
    wait_for_log(source, "items registered")
    return source


def other_updates_after(client, count):
    """Waits until every OTHR item has `count` more updates than now (its stream goes on)."""
    def updates():
        per = {}
        for m in messages_so_far(client):
            if m["type"] == "update":
                per[m["item"]] = per.get(m["item"], 0) + 1
        return per
    start = updates()
    wait_until(lambda: all(updates().get(n, 0) >= start.get(n, 0) + count for n in OTHER_NAMES), 20,
               f"{count} more updates of every {OTHER} item")


def mdcast_members(port):
    code, body = get(port, "/info")
    check(code == 200, f"/info: {code}")
    group = next(g for g in json.loads(body)["redundancy"]["groups"] if g["service"] == "MDCAST")
    return {m["distributor"]: m for m in group["members"]}


def check_members_current(port, sources):
    """Each member's lag is told (/info, /metrics, mdcastctl): both publish, so each has a recent update
    and a delay (publish stamp to this server, one host's clock) under a second."""
    def told():
        members = mdcast_members(port)
        return all(members[s]["update_delay_ms"] is not None for s in sources) and members
    wait_until(told, 10, "a lag for each member")
    members = mdcast_members(port)
    for s in sources:
        m = members[s]
        check(0 <= m["update_delay_ms"] < 1000 and m["last_update_ms_ago"] < 1000, f"member {s}: {m}")
        gauge = metric(port, f'mdcast_server_redundancy_member_update_delay_seconds{{service="MDCAST",'
                             f'distributor="{s}"}}')
        check(0 <= gauge < 1, f"member {s} delay gauge {gauge}")
    check(members[1]["behind_active_ms"] == 0, f"the active member is not behind itself: {members[1]}")
    ctl = subprocess.run([os.environ.get("MDCAST_CTL", "mdcastctl"), "--admin", f"127.0.0.1:{port}", "status"],
                         capture_output=True, text=True, timeout=30)
    check("ms on the active" in ctl.stdout and "last update" in ctl.stdout, f"mdcastctl status: {ctl.stdout}")


def check_directory_shows_the_group(stack, active):
    """An SDK consumer's directory: both MDCAST members with group_members 2, only `active`'s
    marked active; OTHR, which one distributor carries, no group."""
    probe = sdk_consumer(stack, [1], "--service", "MDCAST", "--items", NAMES[0], "--directory",
                         "--duration", "600", name=f"directory-probe{active}")

    def directory():
        return next((e["services"] for e in json_events(probe) if e.get("event") == "directory"), None)
    wait_until(directory, 15, "the SDK consumer's directory")
    services = directory()
    mdcast = sorted((s["id"] >> 16, s["group_members"], s["group_active"]) for s in services
                    if s["name"] == "MDCAST")
    check(mdcast == [(1, 2, active == 1), (2, 2, active == 2)], f"MDCAST in the directory: {services}")
    other = [(s["group_members"], s["group_active"]) for s in services if s["name"] == OTHER]
    check(other == [(0, False)], f"{OTHER} in the directory: {services}")
    probe.popen.send_signal(signal.SIGINT)
    probe.wait(10)


def check_ws_directory_shows_the_group(port, active):
    """A WebSocket client's Source directory (LSEG's shape, docs/websocket.md): each MDCAST member's
    Info names the group's size and which member is active; OTHR's Info has neither."""
    async def directory():
        ws = await connect(port)
        try:
            check((await login(ws)).get("State", {}).get("Data") == "Ok", "WebSocket login")
            await ws.send(json.dumps({"ID": 5, "Domain": "Source", "Key": {"Filter": 1}}))
            while True:
                for m in await receive(ws, 10):
                    if m.get("ID") == 5 and m.get("Type") == "Refresh":
                        return m
        finally:
            await ws.close()
    refresh = asyncio.run(directory())
    infos = {e["Key"]: e["FilterList"]["Entries"][0]["Elements"] for e in refresh["Map"]["Entries"]}
    mdcast = sorted((key >> 16, info.get("GroupMembers"), info.get("GroupActive"))
                    for key, info in infos.items() if info["Name"] == "MDCAST")
    check(mdcast == [(1, 2, int(active == 1)), (2, 2, int(active == 2))], f"MDCAST in the Source directory: {infos}")
    other = [info for info in infos.values() if info["Name"] == OTHER]
    check(len(other) == 1 and "GroupMembers" not in other[0] and "GroupActive" not in other[0],
          f"{OTHER} in the Source directory: {other}")


def test_a_switch_moves_only_its_service():
    with Stack("redund-services") as stack:
        ws_port = free_port()
        pair = Pair(stack, extra_clients=ws_section(ws_port))
        start_other_source(pair)
        other = stack.client(1, "--service", OTHER, "--items", ",".join(OTHER_NAMES), "--duration", "600",
                             name="client-other")
        other_updates_after(other, 3)
        port = admin_port(pair.server)
        code, body = get(port, "/info")
        groups = [g["service"] for g in json.loads(body)["redundancy"]["groups"]] if code == 200 else None
        check(groups == ["MDCAST"], f"redundancy groups on /info: {groups} ({code})")

        check_members_current(port, [1, 2])
        check_directory_shows_the_group(stack, active=1)
        check_ws_directory_shows_the_group(ws_port, active=1)

        # 1. MDCAST's active publisher goes: only MDCAST moves.
        pair.sources[1].popen.kill()
        pair.wait_served_by(2)
        check(switch_lines(pair.server) == [("1", "2", "service_down")], f"switches {switch_lines(pair.server)}")
        other_updates_after(other, 3)
        check(f"service {OTHER} moved" not in pair.server.log_text(), f"{OTHER} switched")
        check_directory_shows_the_group(stack, active=2)
        check_ws_directory_shows_the_group(ws_port, active=2)
        # The member whose publisher went shows its last update growing old; the active one is current.
        time.sleep(1.5)
        members = mdcast_members(port)
        check(members[1]["last_update_ms_ago"] >= 1000 and members[2]["last_update_ms_ago"] < 1000,
              f"members' last updates after the publisher of 1 went: {members}")

        # 2. Distributor 1 goes: OTHR, with no standby, is told why; MDCAST is untouched.
        before = len(messages_so_far(other))
        pair.distributor(1).popen.kill()
        wait_until(lambda: {m["item"] for m in messages_so_far(other)[before:] if m["type"] == "status"}
                   == set(OTHER_NAMES), 20, f"a status for each of {OTHER}'s items after its only distributor went")
        pair.wait_served_by(2)  # MDCAST's updates go on from distributor 2
        other.popen.send_signal(signal.SIGINT)
        other.wait(10)
        pair.finish(switches=1)

        lines = messages(other)
        summary = [m for m in lines if m["type"] == "summary"]
        check_raw_stream(lines[:before] + summary, switches=0, names=OTHER_NAMES)
        items = by_item(lines)
        for name in OTHER_NAMES:
            got = items[name]
            statuses = [m for m in got if m["type"] == "status"]
            check(len(statuses) == 1, f"{name}: statuses {statuses}")
            after = got[got.index(statuses[0]):]
            check(statuses[0]["data"] == "suspect" and statuses[0]["text"], f"{name}: status {statuses[0]}")
            check(all(m["type"] == "status" for m in after), f"{name}: shown again after the status: {after[:3]}")
        check(all(m["id"] >> 40 == 1 for m in lines if m["type"] in ("refresh", "update")),
              f"an {OTHER} item came from another distributor")
        check(switch_lines(pair.server) == [("1", "2", "service_down")], f"switches {switch_lines(pair.server)}")


if __name__ == "__main__":
    run([test_a_switch_moves_only_its_service])
