"""Cascade (docs/cascade.md): edge servers fed over TCP by a parent server
instead of the multicast backbone. source -> distributor -> hub (backbone) ->
edge1 (upstream.kind tcp, parent: the hub) -> edge2 (parent: edge1), a client
on each: every value and sequence checked, as on the hub. Then the failures:
the edge's parent killed with a second parent listed (the items go suspect,
then fresh images from the other parent) and the parent frozen (nothing read
for upstream.heartbeat_timeout_ms: suspect, then a fresh image once it is back).
Never an update shown as current between the suspect status and the image."""
import os
import signal
import sys
from decimal import Decimal

from harness import (BIN, Stack, admin_port, check, free_port, http_get, metric, run, single_user_file, wait_for_log,
                     wait_for_port, wait_until)
import test_posting as posting
from test_tls import Pki, tls_server
from streams import by_item, check_full_stream, expected_fields, messages, sent_updates, wait_for_update

ITEMS = 10
ADMIN = "admin:\n  port: 0\n"  # the edge's metrics on a free port (harness.admin_port)


def edge(stack, instance, parents, extra="", tls="", reconnect_delay_ms=200):
    """An mdcast-server fed over TCP by `parents` (instance numbers of the stack)."""
    port = free_port()
    listed = ", ".join(f'"127.0.0.1:{stack.client_ports[p]}"' for p in parents)
    cfg = stack.write(f"server{instance}.yaml", f"""
clients:
  port: {port}
upstream:
  kind: tcp
  parents: [{listed}]
  user: edge{instance}
  heartbeat_interval_ms: 500
  heartbeat_timeout_ms: 3000
  reconnect_delay_ms: {reconnect_delay_ms}
{tls}{extra}""")
    p = stack.start(f"server{instance}", [BIN["server"], "--config", cfg])
    wait_for_port(port, p)
    stack.client_ports[instance] = port
    return p


def publish(stack, servers, rate="200", duration="30"):
    """Starts the source and waits until every server in `servers` lists its service."""
    source = stack.source("--items", str(ITEMS), "--rate", rate, "--duration", duration)
    wait_for_log(source, "items registered")
    for server in servers:
        wait_for_log(server, "service MDCAST (", timeout=15)
    return source


def test_chain_hub_edge_edge_every_value_in_order():
    with Stack("cascade-chain") as stack:
        stack.distributor()
        hub = stack.server(1)
        edge1 = edge(stack, 2, [1])
        edge2 = edge(stack, 3, [2])
        source = publish(stack, (hub, edge1, edge2), rate="400", duration="4")
        names = ["ITEM000001", "ITEM000004", "ITEM000009"]
        clients = [stack.client(i, "--items", ",".join(names), "--duration", "6", name=f"client{i}")
                   for i in (1, 2, 3)]
        view = stack.client(3, "--items", ",".join(names), "--view", "BID,ASK", "--duration", "6",
                            name="edge2_view")
        check(source.wait(20) == 0, "source failed")
        total = sent_updates(source)
        for client in clients + [view]:
            check(client.wait(20) == 0, f"{client.name} exit code")
        for client in clients:
            check_full_stream(messages(client), names, total, ITEMS)
        check_full_stream(messages(view), names, total, ITEMS, view={"BID", "ASK"})
        check("logged in to parent" in edge2.log_text(), "edge2 never logged in to edge1")
        lost = [line for line in edge1.log_text().splitlines() if "item(s) suspect" in line]
        check(not lost, f"edge1 lost its link: {lost}")


def test_only_what_edge_clients_want_is_subscribed_at_the_parent():
    with Stack("cascade-interest") as stack:
        stack.distributor()
        hub = stack.server(1)
        edge_server = edge(stack, 2, [1])
        source = publish(stack, (hub, edge_server))
        hub_admin, edge_admin = admin_port(hub), admin_port(edge_server)
        names = ["ITEM000001", "ITEM000006"]
        first = stack.client(2, "--items", ",".join(names), "--duration", "3", name="first")
        second = stack.client(2, "--items", names[0], "--duration", "3", name="second")
        for name in names:
            wait_for_update(first, name)
        # Two items wanted at the edge (one of them by two clients): two at the hub, of ten.
        check(metric(hub_admin, "mdcast_server_subscriptions") == 2,
              f"hub subscriptions {metric(hub_admin, 'mdcast_server_subscriptions')}, want 2")
        check(metric(edge_admin, "mdcast_server_upstream_items_wanted") == 2, "edge items wanted")
        check(first.wait(20) == 0 and second.wait(20) == 0, "client exit code")
        # The last subscribers gone: released at the hub.
        wait_until(lambda: metric(hub_admin, "mdcast_server_subscriptions") == 0, 15,
                   "the hub's subscriptions released")
        check(metric(edge_admin, "mdcast_server_upstream_released_total") == 2, "edge released count")
        # Subscribed again: a fresh image from the hub, not the cached one left behind.
        third = stack.client(2, "--items", names[0], "--duration", "3", name="third")
        check(third.wait(20) == 0, "client exit code")
        got = by_item(messages(third))[names[0]]
        # The item is known but not fed: said so (suspect, recovering), then the image.
        image_at = next((i for i, m in enumerate(got) if m["type"] == "refresh"), None)
        check(image_at is not None and all(m["type"] == "status" and m["data"] == "suspect"
                                           for m in got[:image_at]), f"before the image: {got[:3]}")
        got = got[image_at:]
        check(got[0]["data"] == "ok", f"image {got[0]}")
        last_seen = max(m["seq"] for m in by_item(messages(first))[names[0]] if m["type"] != "status")
        check(got[0]["seq"] > last_seen, f"image seq {got[0]['seq']} is not newer than {last_seen}: stale")
        seq = got[0]["seq"]
        for u in [m for m in got if m["type"] == "update"]:
            check(u["seq"] == seq + 1, f"update seq {u['seq']} after {seq}")
            seq = u["seq"]
            check(u["fields"] == expected_fields(1, seq), f"update {seq} fields {u['fields']}")
        check(seq > got[0]["seq"], "no update after the fresh image")
        source.stop()


def test_link_over_tls_checks_the_parent_certificate():
    with Stack("cascade-tls") as stack:
        pki = Pki(stack.dir)
        cert, key = pki.issue("hub", "localhost")
        os.makedirs(os.path.join(stack.dir, "other"))
        stranger = Pki(os.path.join(stack.dir, "other"), name="other")
        stack.distributor()
        hub, _, _ = tls_server(stack, cert, key)  # client_ports[1]: the hub's TLS port
        trusting = edge(stack, 2, [1], tls=f"  tls: true\n  tls_ca_file: {pki.ca}\n")
        doubting = edge(stack, 3, [1], tls=f"  tls: true\n  tls_ca_file: {stranger.ca}\n")
        source = publish(stack, (hub, trusting))
        wait_for_log(trusting, "over TLS")
        name = "ITEM000005"
        client = stack.client(2, "--items", name, "--duration", "3")
        refused = stack.client(3, "--items", name, "--duration", "3", name="refused")
        check(client.wait(20) == 0 and refused.wait(20) == 0, "client exit code")
        got = by_item(messages(client))[name]
        check(got[0]["type"] == "refresh" and got[0]["data"] == "ok", f"first message {got[:1]}")
        seq = got[0]["seq"]
        for u in [m for m in got if m["type"] == "update"]:
            check(u["seq"] == seq + 1 and u["fields"] == expected_fields(5, u["seq"]), f"update {u}")
            seq = u["seq"]
        check(seq > got[0]["seq"], "no update over the TLS link")
        # A parent whose certificate the edge's CA did not sign is never logged in to.
        check("certificate verify failed" in doubting.log_text(), "edge 3: no verification failure logged")
        check("logged in to parent" not in doubting.log_text(), "edge 3 logged in to an unverified parent")
        check(all(m["type"] == "status" and m["data"] == "suspect"
                  for m in by_item(messages(refused)).get(name, [])), "edge 3 served data")
        source.stop()


def test_parent_auth_and_entitlements_bound_the_edge():
    with Stack("cascade-auth") as stack:
        users = single_user_file(stack, ["ITEM000001"], user="edge2", password="edge-secret")
        good = stack.write("edge.password", "edge-secret\n")
        bad = stack.write("wrong.password", "guess\n")
        stack.distributor()
        hub = stack.server(1, extra=f"auth:\n  users_file: {users}\n")
        entitled = edge(stack, 2, [1], extra=f"  password_file: {good}\n")
        intruder = edge(stack, 3, [1], extra=f"  password_file: {bad}\n")
        source = publish(stack, (hub, entitled))
        client = stack.client(2, "--items", "ITEM000001,ITEM000003", "--duration", "3")
        check(client.wait(20) == 0, "client exit code")
        got = by_item(messages(client))
        allowed = got["ITEM000001"]
        check(allowed[0]["type"] == "refresh" and allowed[0]["data"] == "ok", f"ITEM000001: {allowed[:1]}")
        check(any(m["type"] == "update" for m in allowed), "ITEM000001: no update")
        denied = got["ITEM000003"]
        check(len(denied) == 1 and denied[0]["stream"] == "closed" and denied[0]["code"] == "NOT_ENTITLED",
              f"ITEM000003, not entitled at the hub for the edge's user: {denied}")
        # A wrong password: never logged in, said in the log, retried slowly.
        wait_for_log(intruder, "login_refused")
        check("logged in to parent" not in intruder.log_text(), "edge 3 logged in with a wrong password")
        source.stop()


def test_distributor_restart_at_the_hub_reaches_the_edge_clients():
    with Stack("cascade-restart") as stack:
        first = stack.distributor()
        hub = stack.server(1)
        edge1 = edge(stack, 2, [1])
        edge2 = edge(stack, 3, [2])
        source = stack.source("--items", str(ITEMS), "--rate", "200", "--duration", "30", name="source1")
        wait_for_log(source, "items registered")
        for server in (hub, edge1, edge2):
            wait_for_log(server, "service MDCAST (", timeout=15)
        name = "ITEM000002"
        clients = [stack.client(i, "--items", name, "--duration", "14", name=f"client{i}") for i in (2, 3)]
        for client in clients:
            wait_for_update(client, name)
        first.stop()
        source.wait(10)  # it loses its distributor and exits
        stack.processes.remove(first)
        stack.distributor()
        # Another service registers first, so the restarted distributor gives the items
        # other ids: the edges must drop the old ones and wait for the new by name.
        other = stack.source("--service", "OTHER", "--items", "3", "--rate", "10", "--duration", "30",
                             name="other")
        wait_for_log(other, "items registered")
        source2 = stack.source("--items", str(ITEMS), "--rate", "200", "--duration", "30", name="source2")
        wait_for_log(source2, "items registered")
        for client in clients:
            check(client.wait(30) == 0, f"{client.name} exit code")
            check_suspect_then_fresh_image(client, name, "")
            got = by_item(messages(client))[name]
            ids = {m["id"] for m in got if m["type"] == "refresh"}
            check(len(ids) == 2, f"{client.name}: not served the new epoch's item id: {ids}")
        check("restarted" in edge1.log_text() and "restarted" in edge2.log_text(), "no restart seen")
        source2.stop()
        other.stop()


def check_suspect_then_fresh_image(client, name, text):
    """The item's stream: updates, a suspect status whose text contains `text`, then a
    fresh image before any update (or, after a resync, an ok status UNCHANGED: the image
    held is current); from then on (a loaded machine may cost another link) no update
    between a suspect status and the next image, updates in sequence after each image,
    every value as published."""
    got = by_item(messages(client))[name]
    suspect_at = next((i for i, m in enumerate(got) if m["type"] == "status"
                       and m["data"] == "suspect" and text in m.get("text", "")), None)
    check(suspect_at is not None, f"{name}: no suspect status naming {text!r}: "
          f"{[(m['type'], m.get('code'), m.get('text')) for m in got if m['type'] != 'update']}")
    check(any(m["type"] == "update" for m in got[:suspect_at]), f"{name}: no update before the link went")
    seq, suspect, updates_after_image = None, True, 0
    held = max((m["seq"] for m in got[:suspect_at] if m["type"] != "status"), default=None)
    for m in got[suspect_at + 1:]:
        if m["type"] == "status" and m["data"] == "ok" and m.get("code") == "UNCHANGED":
            seq, suspect = seq if seq is not None else held, False  # the image held is current
        elif m["type"] == "status":
            suspect = suspect or m["data"] == "suspect"
        elif m["type"] == "refresh":
            check(m["data"] == "ok", f"{name}: fresh image not ok: {m}")
            seq, suspect = m["seq"], False
        else:
            check(not suspect, f"{name}: update {m['seq']} shown as current before a fresh image")
            check(m["seq"] == seq + 1, f"{name}: update seq {m['seq']} after {seq}")
            seq = m["seq"]
            want = expected_fields(int(name[4:]), seq)
            check(m["fields"] == want, f"{name}: update {seq} fields {m['fields']} want {want}")
            updates_after_image += 1
    check(seq is not None, f"{name}: no fresh image after the suspect status")
    check(updates_after_image > 0, f"{name}: no update after the fresh image")


def test_parent_killed_fails_over_to_the_second_parent():
    with Stack("cascade-failover") as stack:
        stack.distributor()
        first = stack.server(1)
        second = stack.server(2)
        edge_server = edge(stack, 3, [1, 2])
        source = publish(stack, (first, second, edge_server))
        names = ["ITEM000002", "ITEM000007"]
        client = stack.client(3, "--items", ",".join(names), "--duration", "12")
        for name in names:
            wait_for_update(client, name)
        first.popen.send_signal(signal.SIGKILL)
        first.popen.wait()
        wait_for_log(edge_server, f"logged in to parent 127.0.0.1:{stack.client_ports[2]}", timeout=15)
        check(client.wait(30) == 0, "client exit code")
        for name in names:
            check_suspect_then_fresh_image(client, name, "link to parent")
        source.stop()


def test_frozen_parent_is_declared_dead_then_recovers():
    with Stack("cascade-frozen") as stack:
        stack.distributor()
        hub = stack.server(1)
        edge_server = edge(stack, 2, [1])
        source = publish(stack, (hub, edge_server))
        name = "ITEM000003"
        client = stack.client(2, "--items", name, "--duration", "16")
        wait_for_update(client, name)
        edge_admin = admin_port(edge_server)
        code, body = http_get(edge_admin, "/healthz")
        check(code == 200 and body.strip() == "ok", f"edge healthz: {code} {body}")
        hub.popen.send_signal(signal.SIGSTOP)  # the link stays open but nothing comes
        try:
            # Declared within the heartbeat bound (3 s here), with a generous margin.
            wait_until(lambda: any(m["type"] == "status" and m["data"] == "suspect"
                                   for m in by_item(messages(client)).get(name, [])),
                       20, "suspect status while the parent is frozen")
            # /healthz speaks of the link, not of distributors the edge never hears.
            code, body = http_get(edge_admin, "/healthz")
            check(code == 503 and "no link to a parent server" in body and
                  f"127.0.0.1:{stack.client_ports[1]}" in body, f"edge healthz while frozen: {code} {body}")
        finally:
            hub.popen.send_signal(signal.SIGCONT)
        wait_until(lambda: http_get(edge_admin, "/healthz")[0] == 200, 20, "edge healthy again")
        check(client.wait(30) == 0, "client exit code")
        check_suspect_then_fresh_image(client, name, "link to parent")
        source.stop()


def test_posts_reach_the_publisher_through_the_edge():
    """A client of the edge posts: the edge sends it to the hub as its own post, the hub
    routes it to the publisher, the answer comes back by post id. The publisher is told
    who posted as "<edge's login>/<client's login>"; a link lost before the answer refuses
    the posts in flight at once, saying so."""
    with Stack("cascade-posts") as stack:
        stack.distributor()
        hub = stack.server(1)
        edge_server = edge(stack, 2, [1], extra="posts:\n  timeout_ms: 30000\n")
        posting.publisher(stack, "CPP", "--accept-posts")
        posting.publisher(stack, "REJ", "--reject-posts", "not from {user}")
        watcher = stack.client(2, "--service", "CPP", "--items", "ITEM000001", "--duration", "60", name="watcher")
        wait_for_update(watcher, "ITEM000001")
        on_stream = posting.post(stack, "CPP", "ITEM000001", "--on-stream", "--count", "3", name="on-stream",
                                 server=2)
        check(on_stream["accepted"] == 3 and on_stream["rejected"] == 0, f"on-stream via the edge: {on_stream}")
        off_stream = posting.post_once_listed(stack, "CPP", "ITEM000002", "--count", "2", name="off-stream",
                                              server=2)
        check(off_stream["accepted"] == 2, f"off-stream via the edge: {off_stream}")
        # The posted BID (10000 + n) * 10^-2 reaches the edge's watcher as an update.
        wait_until(lambda: any(m["type"] == "update" and m["fields"].get("BID") in (Decimal("100.01"), Decimal("100.02"))
                               for m in by_item(messages(watcher)).get("ITEM000001", [])),
                   20, "the posted values as updates at the edge")
        rejected = posting.post_once_listed(stack, "REJ", "ITEM000000", "--user", "trader", name="rejected",
                                            server=2)
        check(rejected["texts"] == ["not from edge2/trader"], f"the publisher's view of the poster: {rejected}")
        edge_admin = admin_port(edge_server)
        check(metric(edge_admin, "mdcast_server_upstream_posts_answered_total") == 6, "edge posts answered")

        hub.popen.send_signal(signal.SIGSTOP)  # the post goes out, no answer comes, the link dies
        try:
            lost = posting.post(stack, "CPP", "ITEM000001", "--on-stream", name="in-flight", server=2)
        finally:
            hub.popen.send_signal(signal.SIGCONT)
        check(lost["codes"] == {"SOURCE_DOWN": 1} and "lost before the post was answered" in lost["texts"][0],
              f"a post in flight on a lost link: {lost}")
        check(metric(edge_admin, "mdcast_server_upstream_posts_refused_total") == 1, "edge posts refused")


def measure_hops():
    """Median and p99 latency of one feed as seen on the hub, edge1 and edge2."""
    with Stack("cascade-measure") as stack:
        stack.distributor()
        servers = [stack.server(1), edge(stack, 2, [1]), edge(stack, 3, [2])]
        source = publish(stack, servers, rate="2000", duration="12")
        names = ",".join(f"ITEM{i:06d}" for i in range(ITEMS))
        clients = [stack.client(i, "--items", names, "--duration", "8", name=f"client{i}") for i in (1, 2, 3)]
        for client, where in zip(clients, ("hub", "edge1 (1 hop)", "edge2 (2 hops)")):
            client.wait(30)
            latency = sorted(m["latency_ns"] for m in messages(client) if m["type"] == "update")
            print(f"{where}: {len(latency)} updates, median {latency[len(latency) // 2] / 1000:.0f} us, "
                  f"p99 {latency[int(len(latency) * 0.99)] / 1000:.0f} us")
        source.stop()


if __name__ == "__main__" and "--measure" in sys.argv:
    measure_hops()
elif __name__ == "__main__":
    run([test_chain_hub_edge_edge_every_value_in_order,
         test_only_what_edge_clients_want_is_subscribed_at_the_parent,
         test_parent_killed_fails_over_to_the_second_parent,
         test_frozen_parent_is_declared_dead_then_recovers,
         test_posts_reach_the_publisher_through_the_edge,
         test_link_over_tls_checks_the_parent_certificate,
         test_parent_auth_and_entitlements_bound_the_edge,
         test_distributor_restart_at_the_hub_reaches_the_edge_clients])
