"""Interactive services under a flood of names (docs/hardening.md, issue 27 item 4):
one client asking for tens of thousands of names fills only its own share of
the server's pending table, and names its source never answered (or answered
NOT_FOUND) leave the distributor's registry once nobody wants them. A
well-behaved client on the same server gets its items meanwhile, and a
broadcast publisher registers its items afterwards."""
import socket
import threading
import time

from harness import PING, Stack, check, frame, login_frame, metric, run, wait_for_log, wait_until
from test_hardening import (SERVICE_ANNOUNCE, SERVICE_ANNOUNCE_RESPONSE, pb_varint, read_frame_of)
from test_tls import admin_port
from harness import LOGIN_RESPONSE, pb_string
from wire import fields, first

SERVICE_INTERACTIVE = 2


class SilentSource:
    """An interactive publisher that announces its service and never answers a
    request: it only reads what it is sent and pings, so it stays connected."""

    def __init__(self, port, service):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.sendall(login_frame("silent-source"))
        read_frame_of(self.sock, LOGIN_RESPONSE)
        self.sock.sendall(frame(SERVICE_ANNOUNCE, pb_string(1, service) + pb_varint(2, SERVICE_INTERACTIVE)))
        check(first(fields(read_frame_of(self.sock, SERVICE_ANNOUNCE_RESPONSE)), 2), "service refused")
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.drain, daemon=True)
        self.thread.start()

    def drain(self):
        self.sock.settimeout(0.5)
        last_ping = 0
        while not self.stop.is_set():
            try:
                if not self.sock.recv(1 << 16):
                    return
            except socket.timeout:
                pass
            except OSError:
                return
            if time.monotonic() - last_ping > 1:
                self.sock.sendall(frame(PING, b""))
                last_ping = time.monotonic()

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


def statuses(client, prefix):
    return [m for m in client.json_lines() if m["type"] == "status" and m["item"].startswith(prefix)]


def test_a_flood_of_names_costs_only_the_flooder():
    with Stack("interactive-flood") as stack:
        distributor = stack.distributor(
            extra="interactive:\n  interest_lease_ms: 3000\n  release_hold_ms: 0\n")
        server = stack.server(1, extra="cache:\n  max_pending_requests: 12000\n")
        dist_admin, server_admin = admin_port(distributor), admin_port(server)
        silent = SilentSource(stack.publisher_port, "NEVER")
        source = stack.source("--interactive", "--items", "100", "--rate", "200", "--duration", "40",
                              "--service", "ONDEMAND")
        wait_for_log(source, "announced as interactive")
        wait_for_log(server, "service ONDEMAND (")
        # 15,000 names nobody will ever answer: 10,000 wait (this client's share),
        # the rest are refused at once, naming the limit.
        flood = stack.client(1, "--service", "NEVER", "--item-count", "15000", "--item-prefix", "GHOST",
                             "--duration", "8", name="flood")
        wait_until(lambda: metric(server_admin, "mdcast_server_pending") >= 10000, 30, "flood's share waiting")
        # A well-behaved client on the same server: its names still fit the table.
        good = stack.client(1, "--service", "ONDEMAND", "--items", "ITEM000003,ITEM000042", "--duration", "4",
                            name="good")
        check(good.wait(30) == 0, "well-behaved client failed")
        images = {m["item"] for m in good.json_lines() if m["type"] == "refresh"}
        check(images == {"ITEM000003", "ITEM000042"}, f"the well-behaved client got images of {images}: "
              f"{[m for m in good.json_lines() if m['type'] == 'status']}")
        check(flood.wait(30) == 0, "flood client failed")
        refused = [m for m in statuses(flood, "GHOST") if m["code"] == "LIMIT_REACHED"]
        check(len(refused) == 5000, f"{len(refused)} of the flood refused, 5000 expected")
        check("cache.max_pending_requests_per_client (10000)" in refused[0]["text"], f"{refused[0]}")
        check(metric(server_admin, "mdcast_server_pending_client_limit_total") == 5000, "refusals not counted")
        # Names a source answered NOT_FOUND: registered while asked, released once unwanted.
        bogus = stack.client(1, "--service", "ONDEMAND", "--item-count", "5000", "--item-prefix", "BOGUS",
                             "--duration", "3", name="bogus")
        check(bogus.wait(30) == 0, "bogus client failed")
        not_found = [m for m in statuses(bogus, "BOGUS") if m["code"] == "NOT_FOUND"]
        check(len(not_found) == 5000, f"{len(not_found)} of 5000 unknown names answered NOT_FOUND")
        # Nobody wants any of them now: the registry keeps only the source's answered items.
        wait_until(lambda: metric(dist_admin, "mdcast_distributor_items") <= 2, 40,
                   "registry back to the answered items")
        check(metric(dist_admin, "mdcast_distributor_interest_items_released_total") >= 15000,
              "released names not counted")
        # A broadcast publisher registers as before.
        broadcast = stack.source("--items", "50", "--rate", "50", "--duration", "2", name="broadcast")
        wait_for_log(broadcast, "items registered")
        check(broadcast.wait(20) == 0, "broadcast source failed")
        silent.close()


if __name__ == "__main__":
    run([test_a_flood_of_names_costs_only_the_flooder])
