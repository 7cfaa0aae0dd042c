"""100 clients on one server instance with subscribe / unsubscribe churn: each
gets exactly the image and then the in-order updates of what it subscribed to,
nothing for what it never asked for, and nothing for a dropped item after the
server's answer to a ping sent behind the unsubscribe (updates already on
their way before it are fine); re-subscribing brings a fresh image."""
import random
import selectors
import socket
import time

from harness import PING, PONG, SUBSCRIBE, Stack, check, frame, login_frame, run, varint, wait_for_log
from wire import REFRESH, UPDATE, fields, first, split_frames

ITEMS = 20
CLIENTS = 100
UNSUBSCRIBE = 32


def subscribe(names):
    return frame(SUBSCRIBE, b"\x12\x06MDCAST" + b"".join(b"\x1a\x0a" + n.encode() for n in names))


def unsubscribe(item_ids):
    packed = b"".join(varint(i) for i in item_ids)
    return frame(UNSUBSCRIBE, b"\x0a" + varint(len(packed)) + packed)


class Client:
    def __init__(self, port, rng):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setblocking(False)
        self.buffer = b""
        self.wanted = set(rng.sample(range(ITEMS), 5))  # item indexes
        self.ids = {}            # item id -> index
        self.state = {}          # index -> last seq since its latest refresh
        self.refreshes = {}      # index -> count
        self.dropped = set()     # indexes unsubscribed
        self.confirmed = False   # the pong behind the unsubscribe has come: nothing more for them
        self.late = []           # updates for a dropped item after that pong
        self.errors = []

    def send(self, data):
        self.sock.setblocking(True)
        self.sock.sendall(data)
        self.sock.setblocking(False)

    def on_data(self, now):
        try:
            chunk = self.sock.recv(1 << 20)
        except BlockingIOError:
            return
        frames, self.buffer = split_frames(self.buffer + chunk)
        for kind, body in frames:
            f = fields(body)
            if kind == PONG:
                self.confirmed = bool(self.dropped)
            elif kind == REFRESH:
                index = int(f[7][0].decode()[4:])
                self.ids[first(f, 1)] = index
                self.state[index] = first(f, 2)
                self.refreshes[index] = self.refreshes.get(index, 0) + 1
                if index not in self.wanted:
                    self.errors.append(f"image of {index}, never asked for")
            elif kind == UPDATE:
                index = self.ids.get(first(f, 1))
                if index is None or index not in self.state:
                    self.errors.append("update before any image")
                    continue
                seq = first(f, 2)
                if seq != self.state[index] + 1:
                    self.errors.append(f"item {index}: update {seq} after {self.state[index]}")
                self.state[index] = seq
                if self.confirmed and index in self.dropped:
                    self.late.append(index)


def test_hundred_clients_with_churn():
    rng = random.Random(2024)
    with Stack("churn") as stack:
        stack.distributor()
        stack.server(1, extra_clients="  max_connections: 200")
        source = stack.source("--items", str(ITEMS), "--rate", "2000", "--duration", "5")
        wait_for_log(source, "items registered")
        clients = [Client(stack.client_ports[1], rng) for _ in range(CLIENTS)]
        selector = selectors.DefaultSelector()
        for c in clients:
            selector.register(c.sock, selectors.EVENT_READ, c)
            c.send(login_frame() + subscribe([f"ITEM{i:06d}" for i in sorted(c.wanted)]))
        churned = False
        start = time.monotonic()
        while time.monotonic() - start < 6:
            now = time.monotonic()
            for key, _ in selector.select(timeout=0.1):
                key.data.on_data(now)
            if not churned and now - start > 1.5:
                churned = True
                for c in clients:  # drop two items, take two new ones
                    drop = rng.sample(sorted(c.wanted), 2)
                    ids = [i for i, index in c.ids.items() if index in drop]
                    for index in drop:
                        c.dropped.add(index)
                        c.wanted.discard(index)
                    new = rng.sample(sorted(set(range(ITEMS)) - c.wanted - set(drop)), 2)
                    c.wanted.update(new)
                    # The server answers in order: after this pong, no update of a dropped item.
                    c.send(unsubscribe(ids) + subscribe([f"ITEM{i:06d}" for i in new]) +
                           frame(PING, varint(1 << 3) + varint(1)))
        check(source.wait(15) == 0, "source failed")
        for c in clients:
            check(not c.errors, f"a client saw: {c.errors[:3]}")
            check(not c.late, f"updates kept coming after unsubscribe: {c.late[:5]}")
            for index in c.wanted:
                check(c.refreshes.get(index, 0) == 1, f"item {index}: {c.refreshes.get(index, 0)} images")
                check(c.state.get(index, 0) > 0, f"item {index}: no updates")
            c.sock.close()


if __name__ == "__main__":
    run([test_hundred_clients_with_churn])
