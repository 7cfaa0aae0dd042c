"""The warm standby of a cascade link (upstream.standby_link, docs/cascade.md "Failure
behaviour"): with two parents the edge keeps a second link logged in to the other one, idle,
and moves to it at once when the active link is lost; a standby parent that is not there
costs the active link nothing."""
import signal
import time

from harness import Stack, admin_port, check, free_port, metric, run, wait_for_log, wait_until
from streams import by_item, messages, wait_for_update
from test_cascade import ADMIN, check_suspect_then_fresh_image, edge, publish


def test_standby_link_takes_over_at_once():
    """upstream.standby_link (the default with two parents): the edge keeps a second link
    logged in to the other parent, idle. kill -9 of the active parent: the standby link
    becomes the active one at once (no connect or login to wait for: the reconnect delay is
    set long here, so a reconnect would show), the items go suspect and come back by the
    resync, and a new standby link is opened once the killed parent is back."""
    with Stack("cascade-standby") as stack:
        stack.distributor()
        first = stack.server(1)
        second = stack.server(2)
        edge_server = edge(stack, 3, [1, 2], extra=ADMIN, reconnect_delay_ms=5000)
        port = admin_port(edge_server)
        source = publish(stack, (first, second, edge_server))
        wait_until(lambda: metric(port, "mdcast_server_upstream_standby_link_up") == 1, 15, "the standby link up")
        names = ["ITEM000002", "ITEM000007"]
        client = stack.client(3, "--items", ",".join(names), "--duration", "12")
        for name in names:
            wait_for_update(client, name)
        killed_at = time.monotonic()
        first.popen.send_signal(signal.SIGKILL)
        first.popen.wait()
        wait_for_log(edge_server, f"failing over to the standby link to parent 127.0.0.1:{stack.client_ports[2]}",
                     timeout=10)
        wait_until(lambda: metric(port, "mdcast_server_upstream_link_up") == 1, 10, "the link up again")
        took = time.monotonic() - killed_at
        print(f"standby link: the link up again {took * 1000:.0f} ms after the kill -9 (metric polled)")
        # Well inside the 5 s reconnect delay: the standby was logged in already.
        check(took < 4, f"link up again {took:.2f} s after the kill")
        check(metric(port, "mdcast_server_upstream_failovers_total") == 1, "failovers counted")
        check(metric(port, "mdcast_server_upstream_standby_link_up") == 0, "a standby with one parent left")
        check(client.wait(30) == 0, "client exit code")
        for name in names:
            check_suspect_then_fresh_image(client, name, "link to parent")
        # The killed parent back: a new standby link to it.
        restarted = stack.server(1, port=stack.client_ports[1], name="server1-again")
        wait_for_log(restarted, "service MDCAST (", timeout=15)
        wait_until(lambda: metric(port, "mdcast_server_upstream_standby_link_up") == 1, 20, "a new standby link")
        source.stop()


def test_standby_parent_down_leaves_the_active_link_alone():
    """The second parent is not there: the edge serves from the first, the standby gauge
    says 0 and the log why; when the second parent starts the standby link comes up."""
    with Stack("cascade-standby-down") as stack:
        stack.distributor()
        first = stack.server(1)
        stack.client_ports[2] = free_port()  # nothing listens there yet
        edge_server = edge(stack, 3, [1, 2], extra=ADMIN)
        port = admin_port(edge_server)
        source = publish(stack, (first, edge_server))
        client = stack.client(3, "--items", "ITEM000003", "--duration", "6")
        wait_for_update(client, "ITEM000003")
        wait_for_log(edge_server, "standby link to parent", timeout=10)
        check(metric(port, "mdcast_server_upstream_standby_link_up") == 0, "a standby link without a parent")
        check(metric(port, "mdcast_server_upstream_link_up") == 1, "the active link")
        second = stack.server(2, port=stack.client_ports[2])
        wait_for_log(second, "service MDCAST (", timeout=15)
        wait_until(lambda: metric(port, "mdcast_server_upstream_standby_link_up") == 1, 20, "the standby link up")
        check(client.wait(30) == 0, "client exit code")
        got = by_item(messages(client))["ITEM000003"]
        check(not [m for m in got if m["type"] == "status"], f"statuses on the active link: {got[:3]}")
        source.stop()


if __name__ == "__main__":
    run([test_standby_link_takes_over_at_once,
         test_standby_parent_down_leaves_the_active_link_alone])
