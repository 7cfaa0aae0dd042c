"""A loopback TCP relay that can cut its link: the cascade scenario puts it between an edge and
its parent to make an outage without network namespaces. cut() closes every relayed connection
(the edge sees its link lost at once) and refuses new ones by closing them on accept until
restore(). Bytes are relayed unchanged, by one thread per direction."""
import socket
import threading
import time


class CutProxy:
    def __init__(self, upstream_port, rate=None):
        """`rate`: bytes/s the upstream's bytes are paced to (None: as they come), through
        small buffers and Ethernet-sized segments, as a slow WAN path holds little."""
        self.upstream = ("127.0.0.1", upstream_port)
        self.rate = rate
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.open = []  # the sockets of live relayed connections
        self.is_cut = False
        self.accepted = 0
        self.refused = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                downstream, _ = self.listener.accept()
            except OSError:
                return  # closed
            with self.lock:
                if self.is_cut:
                    self.refused += 1
                    downstream.close()
                    continue
                self.accepted += 1
            try:
                upstream = self._connect()
            except OSError:
                downstream.close()
                continue
            for s in (downstream, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                s.settimeout(None)
            with self.lock:
                self.open += [downstream, upstream]
            for source, sink, rate in ((downstream, upstream, None), (upstream, downstream, self.rate)):
                threading.Thread(target=self._pump, args=(source, sink, rate), daemon=True).start()

    def _connect(self):
        upstream = socket.socket()
        if self.rate:
            upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1448)
            upstream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
        upstream.settimeout(5)
        upstream.connect(self.upstream)
        return upstream

    def _pump(self, source, sink, rate):
        started, sent = time.monotonic(), 0
        try:
            while True:
                data = source.recv(1024 if rate else 1 << 20)
                if not data:
                    break
                sink.sendall(data)
                sent += len(data)
                ahead = sent / rate - (time.monotonic() - started) if rate else 0
                if ahead > 0:
                    time.sleep(ahead)
        except OSError:
            pass
        for s in (source, sink):
            shut(s)

    def cut(self):
        with self.lock:
            self.is_cut = True
            live, self.open = self.open, []
        for s in live:
            shut(s)

    def restore(self):
        with self.lock:
            self.is_cut = False

    def close(self):
        self.cut()
        self.listener.close()


def shut(s):
    """Ends both directions of a relayed socket (its pump threads then end too)."""
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
