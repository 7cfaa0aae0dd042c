"""A loopback TCP relay that can cut its link: the cascade scenario puts it between an edge and
its parent to make an outage without network namespaces. cut() closes every relayed connection
(the edge sees its link lost at once) and refuses new ones by closing them on accept until
restore(). Bytes are relayed unchanged, by one thread per direction."""
import socket
import threading


class CutProxy:
    def __init__(self, upstream_port):
        self.upstream = ("127.0.0.1", upstream_port)
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
                upstream = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                downstream.close()
                continue
            for s in (downstream, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                s.settimeout(None)
            with self.lock:
                self.open += [downstream, upstream]
            for source, sink in ((downstream, upstream), (upstream, downstream)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source, sink):
        try:
            while True:
                data = source.recv(1 << 20)
                if not data:
                    break
                sink.sendall(data)
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
