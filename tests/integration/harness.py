"""Integration-test harness: starts the real mdcast binaries on loopback.

Every test gets free TCP/UDP ports, its own multicast group (so tests running
in parallel never hear each other), a temporary directory for configs and
logs, and a deadline. Processes are stopped by PID at the end, even when the
test fails; their logs are printed on failure.
"""
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

BIN = {
    "distributor": os.environ.get("MDCAST_DISTRIBUTOR", "mdcast-distributor"),
    "server": os.environ.get("MDCAST_SERVER", "mdcast-server"),
    "source": os.environ.get("MDCAST_SOURCE", "mdcast-source"),
    "client": os.environ.get("MDCAST_CLIENT", "mdcast-client"),
    "bench-consumer": os.environ.get("MDCAST_BENCH_CONSUMER", "mdcast-bench-consumer"),
    "capture": os.environ.get("MDCAST_CAPTURE", "mdcast-capture"),
    "replay": os.environ.get("MDCAST_REPLAY", "mdcast-replay"),
}
ETC = os.environ.get("MDCAST_ETC", os.path.join(os.path.dirname(__file__), "../../etc"))


def free_port(kind=socket.SOCK_STREAM):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Process:
    def __init__(self, name, argv, log_path, stdout_path=None):
        self.name = name
        self.log_path = log_path
        self.stdout_path = stdout_path
        self.log = open(log_path, "wb")
        self.out = open(stdout_path, "wb") if stdout_path else self.log
        self.popen = subprocess.Popen(argv, stdout=self.out, stderr=self.log)

    def wait(self, timeout):
        return self.popen.wait(timeout=timeout)

    def stop(self):
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self.log.close()
        if self.out is not self.log:
            self.out.close()

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def json_lines(self):
        with open(self.stdout_path, "rb") as f:
            return [json.loads(line) for line in f.read().decode().splitlines() if line.strip()]


class Stack:
    """A distributor and servers with test-private ports and multicast group."""

    def __init__(self, name):
        self.dir = tempfile.mkdtemp(prefix=f"mdcast-{name}-")
        self.processes = []
        self.group = f"239.255.{random.randint(1, 254)}.{random.randint(1, 254)}"
        self.backbone_port = free_port(socket.SOCK_DGRAM)
        self.publisher_port = free_port()
        self.client_ports = {}

    def __enter__(self):
        return self

    def __exit__(self, kind, value, trace):
        self.finish(failed=kind is not None)
        return False

    def finish(self, failed):
        """Stops every process; a failed test prints their logs and keeps its directory (named
        on stderr). A passing one's directory is removed once every test of the script passed
        (run(), or remove_now=True where nothing reads it afterwards): a suite run leaves nothing
        behind in /tmp. MDCAST_KEEP_TEST_DIRS=1 keeps every directory."""
        for p in reversed(self.processes):
            p.stop()
        if failed:
            for p in self.processes:
                sys.stderr.write(f"---- {p.name} log ----\n{p.log_text()[-6000:]}\n")
            sys.stderr.write(f"---- logs and configs kept in {self.dir}\n")
        else:
            PASSED_DIRS.append(self.dir)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def start(self, name, argv, stdout=False):
        p = Process(name, argv, os.path.join(self.dir, name + ".log"),
                    os.path.join(self.dir, name + ".out") if stdout else None)
        self.processes.append(p)
        return p

    def distributor(self, extra="", extra_publishers=""):
        cfg = self.write("distributor.yaml", f"""
publishers:
  port: {self.publisher_port}
{extra_publishers}
backbone:
  group: {self.group}
  port: {self.backbone_port}
{extra}""")
        p = self.start("distributor", [BIN["distributor"], "--config", cfg])
        wait_for_port(self.publisher_port, p)
        return p

    def server(self, instance=1, extra_clients="", extra="", port=None, name=None):
        """`port`: listen there (a restart on the port clients know); `name`: of the process."""
        port = port or free_port()
        cfg = self.write(f"server{instance}.yaml", f"""
clients:
  port: {port}
{extra_clients}
backbone:
  group: {self.group}
  port: {self.backbone_port}
{extra}""")
        # Instance N listens on port + N - 1; the test wrote the port for this instance.
        p = self.start(name or f"server{instance}", [BIN["server"], "--config", cfg])
        wait_for_port(port, p)
        self.client_ports[instance] = port
        return p

    def source(self, *args, name="source", stdout=False):
        return self.start(name, [BIN["source"], "--distributor", f"127.0.0.1:{self.publisher_port}", *args],
                          stdout=stdout)

    def client(self, instance, *args, name="client"):
        return self.start(name, [BIN["client"], "--server", f"127.0.0.1:{self.client_ports[instance]}",
                                 "--output", "json", *args], stdout=True)


def wait_for_port(port, process, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.popen.poll() is not None:
            raise AssertionError(f"{process.name} exited early:\n{process.log_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"{process.name} did not listen on {port}")


def wait_for_log(process, text, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in process.log_text():
            return
        if process.popen.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(f"'{text}' not in {process.name} log:\n{process.log_text()}")


# ---- the raw wire protocol, for tests that speak it directly ---------------------------

FRAME = struct.Struct(">IHH")
LOGIN_REQUEST, LOGIN_RESPONSE, PING, PONG, CLOSE = 1, 2, 3, 4, 5
SUBSCRIBE = 31


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def pb_string(field, text):
    data = text.encode()
    return varint(field << 3 | 2) + varint(len(data)) + data


def frame(kind, body=b""):
    return FRAME.pack(len(body), kind, 0) + body


def login_frame(user="tester"):
    return frame(LOGIN_REQUEST, pb_string(1, user) + pb_string(2, "integration-test"))


def read_frames_until_close(sock, timeout=5):
    """Reads until the peer closes; returns the list of (type, body)."""
    sock.settimeout(timeout)
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not chunk:
            break
        data += chunk
    return split_frames(data)[0]


def split_frames(data):
    """(list of (type, body), bytes left over)."""
    frames = []
    while len(data) >= FRAME.size:
        length, kind, _ = FRAME.unpack_from(data)
        if len(data) < FRAME.size + length:
            break
        frames.append((kind, data[FRAME.size:FRAME.size + length]))
        data = data[FRAME.size + length:]
    return frames, data


def stuck_subscriber(port, items=50):
    """Logs in, subscribes to `items` items (ITEM000000…) of service MDCAST and reads
    nothing. With small socket buffers on both ends (this one set before connecting, the
    server's with output.tcp_send_buffer_bytes: 4096) the server's queue for it fills
    within a second at a few thousand updates/s."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    body = b"".join(b"\x1a" + bytes([10]) + f"ITEM{i:06d}".encode() for i in range(items))
    s.sendall(login_frame() + frame(SUBSCRIBE, b"\x12\x06MDCAST" + body))
    return s


def admin_port(process):
    """The admin HTTP port the process logged (admin.port 0 picks a free one)."""
    wait_for_log(process, "admin http on")
    return int(re.search(r"admin http on [\d.]+:(\d+)", process.log_text()).group(1))


def http_get(port, path, method="GET"):
    """(status, body) of one request to a daemon's admin endpoint; HTTP errors are answers too."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def metric(port, name):
    """One sample of the admin endpoint's /metrics (`name` with its labels, if any)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    match = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    check(match, f"{name} not in /metrics")
    return float(match.group(1))


def password_hash(password):
    """A users-file hash made by mdcast-passwd (few iterations: tests measure behaviour)."""
    out = subprocess.run([os.environ.get("MDCAST_PASSWD", "mdcast-passwd"), "--iterations", "1000"],
                         input=password + "\n", capture_output=True, text=True, timeout=30, check=True)
    return out.stdout.strip()


def single_user_file(stack, items, user="alice", password="alice-secret", service="MDCAST"):
    """Writes a users file with one user allowed `items` (a list of names or patterns) of
    `service`; returns its path."""
    names = ", ".join(f'"{item}"' for item in items)
    return stack.write("users.yaml", f"""
users:
  {user}:
    password: "{password_hash(password)}"
    allow:
      - service: {service}
        items: [{names}]
""")


def check(condition, message):
    if not condition:
        raise AssertionError(message)


PASSED_DIRS = []  # directories of stacks whose test passed (logs may still be read)


def remove_passed_dirs():
    """Removes the directories of passed stacks, unless MDCAST_KEEP_TEST_DIRS is set."""
    if not os.environ.get("MDCAST_KEEP_TEST_DIRS"):
        for directory in PASSED_DIRS:
            shutil.rmtree(directory, ignore_errors=True)
    PASSED_DIRS.clear()


def run(tests):
    """Runs the test functions, prints a line for each, exits non-zero on failure; when every
    one passed, their stacks' directories are removed."""
    failed = 0
    for test in tests:
        start = time.monotonic()
        try:
            test()
            print(f"PASS {test.__name__} ({time.monotonic() - start:.1f}s)", flush=True)
        except Exception as error:  # noqa: BLE001 - report every failure kind
            failed += 1
            print(f"FAIL {test.__name__}: {error}", flush=True)
    if not failed:
        remove_passed_dirs()
    sys.exit(1 if failed else 0)


# ---- client SDK programs (tests/client-sdk/sdk_*_probe.cpp), for test_sdk_*.py ----------

SDK_BIN = {
    "consumer": os.environ.get("MDCAST_SDK_CONSUMER", "sdk-consumer-probe"),
    "publisher": os.environ.get("MDCAST_SDK_PUBLISHER", "sdk-publisher-probe"),
}


def sdk_consumer(stack, servers, *args, name="consumer"):
    """An SDK Consumer on the failover list `servers` (instance numbers of `stack`)
    that prints one JSON line per event."""
    addresses = ",".join(f"127.0.0.1:{stack.client_ports[i]}" for i in servers)
    return stack.start(name, [SDK_BIN["consumer"], "--servers", addresses, *args], stdout=True)


def sdk_publisher(stack, *args, distributors=None, name="publisher"):
    """An SDK Publisher on `distributors` (default: the stack's distributor)."""
    addresses = distributors or f"127.0.0.1:{stack.publisher_port}"
    return stack.start(name, [SDK_BIN["publisher"], "--distributors", addresses, *args], stdout=True)


def json_events(process):
    """The complete JSON lines a process has printed so far (a line being written is skipped)."""
    events = []
    with open(process.stdout_path, "rb") as f:
        for line in f.read().decode(errors="replace").splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:
                pass
    return events


def wait_until(predicate, timeout, what):
    """Polls predicate() until it holds; fails naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"no {what} within {timeout} s")


def wait_for_events(process, predicate, timeout=10, what="events"):
    """Polls the JSON lines of `process` until predicate(events) holds; returns the events."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = json_events(process)
        if predicate(events):
            return events
        if process.popen.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(f"{process.name}: no {what} within {timeout} s; "
                         f"last lines: {json_events(process)[-5:]}")
