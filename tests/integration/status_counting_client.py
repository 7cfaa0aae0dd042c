"""A client speaking the raw binary protocol that subscribes to many items and
counts every frame it receives, and its bytes, by kind (and statuses by code),
on a reader thread. It logs in either as an older client (ItemStatus only) or
taking group statuses (LoginRequest.group_status, field 6), so a test or a
measurement sees exactly what goes to each kind of client."""
import collections
import socket
import struct
import threading

import harness
from wire import fields, first

ITEM_STATUS, GROUP_STATUS, REFRESH, PING = 22, 24, 20, 3
STATUS_CODES = {3: "SOURCE_DOWN", 4: "UNRECOVERABLE_LOSS", 5: "SOURCE_RESET", 9: "RECOVERING"}
FRAME = struct.Struct("!IHH")
MAX_FRAME_BYTES = 60_000  # a Subscribe below the 64 KB frame limit


def status_of(body):
    """(code name, text) of a Status message body."""
    f = fields(body)
    return STATUS_CODES.get(first(f, 3), str(first(f, 3))), first(f, 4, b"").decode()


class CountingClient:
    def __init__(self, port, group_status, user="counter"):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.lock = threading.Lock()
        self.frames = collections.Counter()  # frame type -> frames
        self.bytes = collections.Counter()  # frame type -> bytes, headers included
        self.item_statuses = collections.Counter()  # (code, text) -> ItemStatus frames
        self.group_items = collections.Counter()  # (code, text) -> items GroupStatus stood for
        self.max_items_per_request = 0
        login = harness.pb_string(1, user) + harness.pb_string(2, "status-counter")
        if group_status:
            login += bytes([6 << 3, 1])
        self.sock.sendall(harness.frame(harness.LOGIN_REQUEST, login))
        self.buffer = b""
        self._read_login_response()
        self.closed = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.pinger = threading.Thread(target=self._ping, daemon=True)  # clients.idle_timeout_ms
        self.pinger.start()

    def _ping(self):
        while not self.closed.wait(2.0):
            try:
                self.sock.sendall(harness.frame(PING))
            except OSError:
                return

    def _read_login_response(self):
        while True:
            frames, self.buffer = harness.split_frames(self.buffer)
            if frames:
                kind, body = frames[0]
                assert kind == harness.LOGIN_RESPONSE, f"frame {kind} before the login response"
                self.max_items_per_request = first(fields(body), 6, 1000) or 1000
                assert not frames[1:], "frames before subscribing"
                return
            self.buffer += self.sock.recv(65536)

    def subscribe(self, service, names):
        """One Subscribe per batch: at most max_items_per_request names and below 64 KB."""
        batch, size = [], 0
        for name in names + [None]:
            encoded = harness.pb_string(3, name) if name else b""
            if batch and (name is None or len(batch) == self.max_items_per_request or
                          size + len(encoded) > MAX_FRAME_BYTES):
                self.sock.sendall(harness.frame(harness.SUBSCRIBE,
                                                harness.pb_string(2, service) + b"".join(batch)))
                batch, size = [], 0
            if name:
                batch.append(encoded)
                size += len(encoded)

    def _read(self):
        data = self.buffer
        self.sock.settimeout(None)
        while True:
            try:
                chunk = self.sock.recv(1 << 20)
            except OSError:
                return
            if not chunk:
                return
            data += chunk
            offset = 0
            counted = []
            while len(data) - offset >= FRAME.size:
                length, kind, _ = FRAME.unpack_from(data, offset)
                end = offset + FRAME.size + length
                if end > len(data):
                    break
                counted.append((kind, data[offset + FRAME.size:end]))
                offset = end
            data = data[offset:]
            with self.lock:
                for kind, body in counted:
                    self._count(kind, body)

    def _count(self, kind, body):
        self.frames[kind] += 1
        self.bytes[kind] += FRAME.size + len(body)
        if kind == ITEM_STATUS:
            self.item_statuses[status_of(first(fields(body), 5, b""))] += 1
        elif kind == GROUP_STATUS:
            f = fields(body)
            self.group_items[status_of(first(f, 4, b""))] += first(f, 5)

    def snapshot(self):
        """(frames, bytes, item statuses, group items) counters, copied."""
        with self.lock:
            return (collections.Counter(self.frames), collections.Counter(self.bytes),
                    collections.Counter(self.item_statuses), collections.Counter(self.group_items))

    def statuses_by_code(self):
        """code -> items told (by an ItemStatus or as part of a GroupStatus)."""
        _, _, items, groups = self.snapshot()
        out = collections.Counter()
        for (code, _), n in list(items.items()) + list(groups.items()):
            out[code] += n
        return out

    def statuses_and_images(self):
        """Status and refresh frames so far (updates and pongs keep coming)."""
        with self.lock:
            return sum(self.frames[kind] for kind in (ITEM_STATUS, GROUP_STATUS, REFRESH))

    def close(self):
        self.closed.set()
        self.sock.close()
