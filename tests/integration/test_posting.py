"""Posting end to end through the C++ SDK (docs/sdk.md, "Posting"): mdcast-bench-poster
(an SDK Consumer) posts through a real server and distributor to mdcast-bench-publisher
(an SDK Publisher) that accepts (and publishes the posted fields as an update) or
rejects with its text; sdk-consumer-probe is the other subscriber. Also the server's
post rules, a service without a publisher, and a flood against posts.max_per_second."""
import asyncio
import json
import os
import time
from decimal import Decimal

import harness
from harness import Stack, check, free_port, run, wait_for_log, wait_for_port
from ws_client import collect_until, connect, login, ws_section

PUBLISHER = os.environ.get("MDCAST_BENCH_PUBLISHER", "mdcast-bench-publisher")
POSTER = os.environ.get("MDCAST_BENCH_POSTER", "mdcast-bench-poster")


def publisher(stack, service, *args, items=3, rate=1):
    p = stack.start(f"publisher-{service}", [PUBLISHER, "--distributor", f"127.0.0.1:{stack.publisher_port}",
                                             "--service", service, "--items", str(items), "--rate", str(rate),
                                             "--duration", "120", *args], stdout=True)
    wait_for_log(p, "items registered", timeout=20)
    return p


def wait_listed(stack, service, timeout=20):
    """Snapshots until the server serves the service's first item: its directory lists the
    service (an off-stream post to a service it does not list is refused NOT_FOUND)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        probe = harness.sdk_consumer(stack, [1], "--service", service, "--items", "ITEM000000", "--snapshot",
                                     "--duration", "1", name=f"listed-{service}")
        check(probe.wait(10) == 0, "the snapshot probe failed")
        if any(e["event"] == "refresh" for e in harness.json_events(probe)):
            return
        time.sleep(0.1)
    raise AssertionError(f"{service} not served within {timeout} s")


def post(stack, service, item, *args, name="poster", server=1):
    """Runs mdcast-bench-poster (on server instance `server`) to the end; returns its JSON summary."""
    p = stack.start(name, [POSTER, "--server", f"127.0.0.1:{stack.client_ports[server]}", "--service", service,
                           "--item", item, "--timeout", "20", *args], stdout=True)
    check(p.wait(60) == 0, f"{name} failed:\n{p.log_text()}")
    return p.json_lines()[-1]


def post_once_listed(stack, service, item, *args, name="poster", timeout=20, server=1):
    """post(), again while the server's directory does not list the service yet."""
    deadline = time.monotonic() + timeout
    while True:
        result = post(stack, service, item, *args, name=name, server=server)
        unlisted = result["codes"] == {"NOT_FOUND": 1} and "no such service" in result["texts"][0]
        if not unlisted or time.monotonic() > deadline:
            return result
        time.sleep(0.2)


def test_on_stream_and_off_stream_posts_are_accepted_and_seen_by_another_subscriber():
    with Stack("post-accept") as stack:
        stack.distributor()
        stack.server(1)
        publisher(stack, "CPP", "--accept-posts")
        watcher = harness.sdk_consumer(stack, [1], "--service", "CPP", "--items", "ITEM000001",
                                       "--duration", "60", name="watcher")
        harness.wait_for_events(watcher, lambda ev: any(e["event"] == "refresh" for e in ev), 20, "refresh")
        on_stream = post(stack, "CPP", "ITEM000001", "--on-stream", "--count", "3", name="on-stream")
        check(on_stream["accepted"] == 3 and on_stream["rejected"] == 0, f"on-stream: {on_stream}")
        off_stream = post(stack, "CPP", "ITEM000001", "--count", "2", name="off-stream")
        check(off_stream["accepted"] == 2, f"off-stream: {off_stream}")
        # BID = (10000 + n) * 10^-2 in the n-th post: the publisher published each as an update.
        harness.wait_for_events(
            watcher, lambda ev: {"100.02", "100.01"} <= {e["fields"].get("22") for e in ev if e["event"] == "update"},
            20, "the posted values as updates")


def test_a_rejection_carries_the_publishers_text_and_no_publisher_is_refused():
    with Stack("post-reject") as stack:
        stack.distributor()
        stack.server(1)
        publisher(stack, "REJ", "--reject-posts", "closed for contributions")
        publisher(stack, "DEFAULT")  # answers with the SDK's default refusal
        wait_listed(stack, "REJ")
        wait_listed(stack, "DEFAULT")
        rejected = post(stack, "REJ", "ITEM000000", name="rejected")
        check(rejected["rejected"] == 1 and rejected["codes"] == {"NONE": 1}, f"rejected: {rejected}")
        check(rejected["texts"] == ["closed for contributions"], f"rejected: {rejected}")
        default = post(stack, "DEFAULT", "ITEM000000", name="default")
        check(default["texts"] == ["this publisher takes no posts"], f"default: {default}")
        unknown = post(stack, "NOSUCH", "ITEM000000", name="unknown")
        check(unknown["codes"] == {"NOT_FOUND": 1} and "no such service" in unknown["texts"][0], f"{unknown}")


def test_a_post_without_a_post_rule_is_not_entitled():
    with Stack("post-rules") as stack:
        users = stack.write("users.yaml", f"""
users:
  trader:
    password: "{harness.password_hash('trader-secret')}"
    allow:
      - service: "*"
    post:
      - service: CPP
        items: ["ITEM000001"]
  viewer:
    password: "{harness.password_hash('viewer-secret')}"
    allow:
      - service: "*"
""")
        stack.distributor()
        stack.server(1, extra=f"auth:\n  users_file: {users}\n")
        publisher(stack, "CPP", "--accept-posts")
        for user in ("trader", "viewer"):
            stack.write(f"{user}.password", f"{user}-secret\n")
        allowed = post_once_listed(stack, "CPP", "ITEM000001", "--user", "trader", "--password-file",
                       os.path.join(stack.dir, "trader.password"), name="trader")
        check(allowed["accepted"] == 1, f"trader: {allowed}")
        other = post(stack, "CPP", "ITEM000002", "--user", "trader", "--password-file",
                     os.path.join(stack.dir, "trader.password"), name="trader-other")
        check(other["codes"] == {"NOT_ENTITLED": 1}, f"trader, another item: {other}")
        refused = post(stack, "CPP", "ITEM000001", "--user", "viewer", "--password-file",
                       os.path.join(stack.dir, "viewer.password"), name="viewer")
        check(refused["codes"] == {"NOT_ENTITLED": 1} and "viewer" in refused["texts"][0], f"viewer: {refused}")


def test_a_flood_of_posts_is_bounded_and_other_clients_data_flows():
    with Stack("post-flood") as stack:
        stack.distributor()
        stack.server(1, extra="posts:\n  max_per_second: 5\n")
        publisher(stack, "CPP", "--accept-posts", items=5, rate=200)
        watcher = harness.sdk_consumer(stack, [1], "--service", "CPP", "--items",
                                       ",".join(f"ITEM{i:06d}" for i in range(5)), "--duration", "60",
                                       name="watcher")
        harness.wait_for_events(watcher, lambda ev: sum(e["event"] == "update" for e in ev) >= 20, 20, "updates")
        flood = post(stack, "CPP", "ITEM000000", "--count", "200", "--rate", "100000", name="flood")
        check(flood["posts"] == 200, f"flood: {flood}")
        check(flood["codes"].get("LIMIT_REACHED", 0) > 0 and flood["accepted"] >= 1, f"flood: {flood}")
        before = sum(e["event"] == "update" for e in harness.json_events(watcher))
        harness.wait_for_events(watcher, lambda ev: sum(e["event"] == "update" for e in ev) >= before + 20, 20,
                                "updates after the flood")
        last = {}
        for e in harness.json_events(watcher):
            check(e["event"] != "status", f"the watcher got a status: {e}")
            if e["event"] == "update":  # every stream whole: the flood never touched the data
                check(e["seq"] == last.get(e["item"], e["seq"] - 1) + 1, f"gap in {e['item']} at {e['seq']}")
                last[e["item"]] = e["seq"]


def test_websocket_posts_the_lseg_way():
    """LSEG's WebSocket Post (as in its market_price_posting.py): on an item's stream, or
    off-stream on the login's ID with a Key; each answered by an Ack carrying the PostID,
    with NakCode and Text when refused."""
    with Stack("post-ws") as stack:
        stack.distributor()
        port = free_port()
        server = stack.server(1, extra_clients=ws_section(port))
        wait_for_port(port, server)
        publisher(stack, "CPP", "--accept-posts")
        publisher(stack, "REJ", "--reject-posts", "closed for contributions")
        wait_listed(stack, "CPP")
        wait_listed(stack, "REJ")

        def post_message(stream, post_id, fields, key=None):
            message = {"ID": stream, "Type": "Post", "Domain": "MarketPrice", "Ack": True, "PostID": post_id,
                       "PostUserInfo": {"Address": "127.0.0.1", "UserID": 1},
                       "Message": {"ID": 0, "Type": "Update", "Domain": "MarketPrice", "Fields": fields}}
            if key:
                message["Key"] = key
            return json.dumps(message)

        def acks(got):
            return {m["AckID"]: m for m in got if m.get("Type") == "Ack"}

        async def scenario():
            ws = await connect(port)
            await login(ws)
            await ws.send(json.dumps({"ID": 2, "Key": {"Service": "CPP", "Name": "ITEM000001"}}))
            await collect_until(ws, lambda got: any(m.get("Type") == "Refresh" for m in got), 20)
            await ws.send(post_message(2, 7, {"BID": 100.07, "ASK": 100.12}))
            await ws.send(post_message(1, 8, {"BID": 100.08}, {"Service": "CPP", "Name": "ITEM000002"}))
            await ws.send(post_message(1, 9, {"BID": 1}, {"Service": "REJ", "Name": "ITEM000000"}))
            await ws.send(post_message(99, 10, {"BID": 1}))
            await ws.send(post_message(2, 11, {"NOPE": 1}))
            got = []
            try:
                await collect_until(ws, lambda so_far: got.extend(so_far[len(got):]) or (len(acks(got)) == 5 and any(
                    m.get("Type") == "Update" and m.get("Fields", {}).get("BID") == Decimal("100.07") for m in got)), 20)
            except Exception as error:  # noqa: BLE001 - say what came before any failure
                raise AssertionError(f"{error}; received: {got[-8:]}") from None
            await ws.close()
            return got

        got = asyncio.run(scenario())
        answered = acks(got)
        check(answered[7]["ID"] == 2 and "NakCode" not in answered[7], f"on-stream post: {answered[7]}")
        check(answered[8]["ID"] == 1 and "NakCode" not in answered[8]
              and answered[8]["Key"] == {"Service": "CPP", "Name": "ITEM000002"}, f"off-stream post: {answered[8]}")
        check(answered[9]["NakCode"] == "DeniedBySrc" and answered[9]["Text"] == "closed for contributions",
              f"rejected post: {answered[9]}")
        check(answered[10]["NakCode"] == "NotOpen", f"post on no stream: {answered[10]}")
        check(answered[11]["NakCode"] == "InvalidContent" and "NOPE" in answered[11]["Text"],
              f"unknown field: {answered[11]}")
        update = next(m for m in got if m.get("Type") == "Update" and m["Fields"].get("BID") == Decimal("100.07"))
        check(update["ID"] == 2 and update["Fields"].get("ASK") == Decimal("100.12"),
              f"the posted values as an update: {update}")


if __name__ == "__main__":
    run([test_on_stream_and_off_stream_posts_are_accepted_and_seen_by_another_subscriber,
         test_a_rejection_carries_the_publishers_text_and_no_publisher_is_refused,
         test_a_post_without_a_post_rule_is_not_entitled,
         test_a_flood_of_posts_is_bounded_and_other_clients_data_flows,
         test_websocket_posts_the_lseg_way])
