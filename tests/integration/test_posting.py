"""Posting end to end through the C++ SDK (docs/sdk.md, "Posting"): mdcast-bench-poster
(an SDK Consumer) posts through a real server and distributor to mdcast-bench-publisher
(an SDK Publisher) that accepts (and publishes the posted fields as an update) or
rejects with its text; sdk-consumer-probe is the other subscriber. Also the server's
post rules, a service without a publisher, and a flood against posts.max_per_second."""
import os
import time

import harness
from harness import Stack, check, run, wait_for_log

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


def post(stack, service, item, *args, name="poster"):
    """Runs mdcast-bench-poster to the end; returns its JSON summary."""
    p = stack.start(name, [POSTER, "--server", f"127.0.0.1:{stack.client_ports[1]}", "--service", service,
                           "--item", item, "--timeout", "20", *args], stdout=True)
    check(p.wait(60) == 0, f"{name} failed:\n{p.log_text()}")
    return p.json_lines()[-1]


def post_once_listed(stack, service, item, *args, name="poster", timeout=20):
    """post(), again while the server's directory does not list the service yet."""
    deadline = time.monotonic() + timeout
    while True:
        result = post(stack, service, item, *args, name=name)
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


if __name__ == "__main__":
    run([test_on_stream_and_off_stream_posts_are_accepted_and_seen_by_another_subscriber,
         test_a_rejection_carries_the_publishers_text_and_no_publisher_is_refused,
         test_a_post_without_a_post_rule_is_not_entitled,
         test_a_flood_of_posts_is_bounded_and_other_clients_data_flows])
