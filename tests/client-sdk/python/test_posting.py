"""Posting end to end in Python (docs/python.md, "Posting"): mdcast.Consumer posts
through a real server and distributor to an mdcast.Publisher, whose on_post accepts
(and publishes the change as an update) or rejects with its own text; the server's
post rules (users file) and bounds, and a service without a publisher."""
import time

import harness
import mdcast
from conftest import collect, password_hash, wait_for_service

SERVICE = "PYSVC"


def users_file(stack):
    return stack.write("users.yaml", f"""
users:
  trader:
    password: "{password_hash('trader-secret')}"
    allow:
      - service: "*"
    post:
      - service: {SERVICE}
        items: ["VOD.L", "BARC.L"]
      - service: GONE
  viewer:
    password: "{password_hash('viewer-secret')}"
    allow:
      - service: "*"
""")


def start_stack(stack, posts="max_per_second: 1000"):
    stack.distributor()
    stack.server(1, extra=f"auth:\n  users_file: {users_file(stack)}\nposts:\n  {posts}\n")
    return f"127.0.0.1:{stack.publisher_port}", f"127.0.0.1:{stack.client_ports[1]}"


def consumer(server, user):
    return mdcast.Consumer(server, user=user, password=f"{user}-secret")


class PricePublisher:
    """Accepts posts of a BID up to 1000 and publishes them as an update; rejects the rest."""

    def __init__(self, distributor):
        self.posts = []
        self.pub = mdcast.Publisher(distributor, on_post=self.on_post)
        self.pub.add_service(SERVICE)
        self.items = {name: self.pub.add_item(SERVICE, name) for name in ("VOD.L", "BARC.L")}
        for item in self.items.values():
            self.pub.refresh(item, {"BID": 100.0, "ASK": 101.0})

    def on_post(self, item, service, name, user, fields):
        self.posts.append((item, service, name, user, dict(fields)))
        if fields.get("BID", 0) > 1000:
            return "price out of range"
        if item:
            self.pub.update(item, fields)
        return True


def test_on_stream_post_is_accepted_and_seen_as_an_update_by_another_subscriber(stack):
    distributor, server = start_stack(stack)
    source = PricePublisher(distributor)
    with source.pub, consumer(server, "trader") as trader, consumer(server, "viewer") as viewer:
        wait_for_service(viewer, SERVICE)
        viewer.subscribe(SERVICE, "VOD.L")
        handle = trader.subscribe(SERVICE, "VOD.L")
        collect(trader, lambda ev: any(e.kind == "refresh" for e in ev))
        collect(viewer, lambda ev: any(e.kind == "refresh" for e in ev))
        result = trader.post(handle, {"BID": 102.5}).result(10)
        assert result.accepted, result
        seen = collect(viewer, lambda ev: any(e.kind == "update" and e.get("BID") == 102.5 for e in ev))
        assert any(e.kind == "update" for e in seen)
        assert source.posts[0][1:4] == (SERVICE, "VOD.L", "trader")
        assert source.posts[0][0] == source.items["VOD.L"] and source.posts[0][4] == {"BID": 102.5}
        assert trader.stats()["posts_accepted"] == 1


def test_off_stream_post_and_the_publishers_rejection_text(stack):
    distributor, server = start_stack(stack)
    source = PricePublisher(distributor)
    with source.pub, consumer(server, "trader") as trader:
        wait_for_service(trader, SERVICE)
        accepted = trader.post_to(SERVICE, "BARC.L", {"BID": 99.5}).result(10)
        assert accepted.accepted, accepted
        rejected = trader.post_to(SERVICE, "BARC.L", {"BID": 5000}).result(10)
        assert not rejected.accepted
        assert rejected.code == mdcast.StatusCode.NONE and rejected.text == "price out of range"
        on_stream = trader.post(12345, {"BID": 1.0}).result(10)  # a handle that streams nothing
        assert on_stream.code == mdcast.StatusCode.NOT_FOUND, on_stream


def test_post_without_entitlement_or_publisher_is_refused_with_the_reason(stack):
    distributor, server = start_stack(stack)
    source = PricePublisher(distributor)
    gone = mdcast.Publisher(distributor)
    gone.add_service("GONE")
    gone.add_item("GONE", "X")
    with source.pub, consumer(server, "trader") as trader, consumer(server, "viewer") as viewer:
        gone.start()
        wait_for_service(trader, "GONE")
        wait_for_service(trader, SERVICE)  # a post to a service the directory lacks is NOT_FOUND
        no_rule = viewer.post_to(SERVICE, "VOD.L", {"BID": 101.0}).result(10)
        assert no_rule.code == mdcast.StatusCode.NOT_ENTITLED and "viewer" in no_rule.text
        other_item = trader.post_to(SERVICE, "OTHER", {"BID": 101.0}).result(10)
        assert other_item.code == mdcast.StatusCode.NOT_ENTITLED
        default = trader.post_to("GONE", "X", {"BID": 1.0}).result(10)
        assert not default.accepted and default.text == "this publisher takes no posts"
        gone.stop()
        deadline = time.monotonic() + 10
        while True:  # the distributor learns at once; the server's directory a moment later
            no_publisher = trader.post_to("GONE", "X", {"BID": 1.0}).result(10)
            if no_publisher.code == mdcast.StatusCode.NOT_FOUND or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert no_publisher.code == mdcast.StatusCode.NOT_FOUND, no_publisher
        assert "no publisher" in no_publisher.text
        unknown = trader.post_to("NOSUCH", "X", {"BID": 1.0}).result(10)
        assert unknown.code == mdcast.StatusCode.NOT_FOUND and "no such service" in unknown.text


def test_a_flood_of_posts_is_refused_past_the_bounds_and_never_stalls_the_data(stack):
    distributor, server = start_stack(stack, posts="max_per_second: 20")
    feed = stack.source("--items", "5", "--rate", "200", "--duration", "60")
    harness.wait_for_log(feed, "items registered")
    source = PricePublisher(distributor)
    with source.pub, consumer(server, "trader") as flooder, consumer(server, "viewer") as watcher:
        wait_for_service(watcher, SERVICE)
        watcher.subscribe_batch("MDCAST", [f"ITEM{i:06d}" for i in range(5)])
        collect(watcher, lambda ev: sum(e.kind == "update" for e in ev) >= 20, timeout=20)
        futures = [flooder.post_to(SERVICE, "VOD.L", {"BID": 100.0 + n / 100}) for n in range(400)]
        during = collect(watcher, lambda ev: sum(e.kind == "update" for e in ev) >= 50, timeout=20)
        results = [f.result(30) for f in futures]  # every post answered, none left hanging
        limited = [r for r in results if r.code == mdcast.StatusCode.LIMIT_REACHED]
        assert limited and all("posts.max" in r.text for r in limited)
        assert sum(r.accepted for r in results) >= 1
        after = collect(watcher, lambda ev: sum(e.kind == "update" for e in ev) >= 20, timeout=20)
        last = {}
        for e in during + after:  # the watcher's streams stayed whole through the flood
            if e.kind == "update":
                assert e.sequence == last.get(e.item, e.sequence - 1) + 1, (e.item, e.sequence)
                last[e.item] = e.sequence
            assert e.kind != "status", (e.item, e.status_text)
        time.sleep(1.1)  # a second's worth of tokens again
        assert flooder.post_to(SERVICE, "VOD.L", {"BID": 101.0}).result(10).accepted
    assert feed.popen.poll() is None
