"""One local mdcast stack for one benchmark point: distributor, N server instances,
source and client processes started from the built binaries on loopback, with
test-private ports and a random 239.255.x.y group (local multicast mode: interface
127.0.0.1, TTL 0), and stopped by PID.

Configs are the profile files (etc/profiles/<name>/*.yaml) with the private ports
and group merged in. Profiles are two-level YAML (section, then key: value), which
is all merge_config understands."""
import json
import os
import random
import signal
import socket
import subprocess
import time

from scale_probe import admin_port

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# The servers' clients.max_connections unless a point needs more (bench_points.connection_limit).
BENCH_MAX_CONNECTIONS = 1000


def free_port(kind=socket.SOCK_STREAM, consecutive=1):
    """A port p such that p .. p+consecutive-1 are free on 127.0.0.1."""
    for _ in range(200):
        with socket.socket(socket.AF_INET, kind) as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + consecutive > 65535:
            continue
        try:
            holders = []
            for p in range(base, base + consecutive):
                h = socket.socket(socket.AF_INET, kind)
                holders.append(h)
                if kind == socket.SOCK_STREAM:
                    # As the daemons' listeners do: a port whose only users are connections
                    # in TIME_WAIT is free to them. Without it, the even ports next to
                    # bind(0)'s odd ones (those connect() prefers) are all "taken" after a
                    # burst of short connections, and 200 tries can fail.
                    h.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                h.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for h in holders:
                h.close()
    raise RuntimeError("no free ports")


def parse_profile(profile_text):
    """Two-level profile YAML -> ({section: {key: value text}}, [section order])."""
    sections, order = {}, []
    current = None
    for line in profile_text.splitlines():
        body = line.split("#", 1)[0].rstrip()
        if not body.strip():
            continue
        if not body.startswith(" "):
            current = body.rstrip(":").strip()
            if current not in sections:
                sections[current] = {}
                order.append(current)
        else:
            key, _, value = body.strip().partition(":")
            sections[current][key.strip()] = value.strip()
    return sections, order


def coalescing_us(profile_dir):
    """The delay a profile adds on purpose: backbone coalescing plus timed writes to clients."""
    def read(name):
        with open(os.path.join(profile_dir, name + ".yaml")) as f:
            return parse_profile(f.read())[0]
    distributor, server = read("distributor"), read("server")
    total = int(distributor.get("backbone", {}).get("flush_interval_us", "0"))
    output = server.get("output", {})
    if output.get("timed_writes", "false") == "true":
        total += 1000 * int(output.get("flush_interval_ms", "10"))
    return total


def merge_config(profile_text, overrides):
    """Profile YAML text with `overrides` ({"section.key": value}) set; returns YAML text."""
    sections, order = parse_profile(profile_text)
    for dotted, value in overrides.items():
        section, key = dotted.split(".", 1)
        if section not in sections:
            sections[section] = {}
            order.append(section)
        sections[section][key] = str(value).lower() if isinstance(value, bool) else str(value)
    out = []
    for section in order:
        out.append(f"{section}:")
        out.extend(f"  {k}: {v}" for k, v in sections[section].items())
    return "\n".join(out) + "\n"


def cpu_seconds(pid):
    """User + system CPU seconds of a live process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    except (OSError, IndexError, ValueError):
        return None


def runnable_wait_seconds(pid):
    """Seconds the process's threads spent runnable but waiting for a CPU (the run queue; the
    second field of /proc/<pid>/task/<tid>/schedstat), or None when it is gone or not told."""
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return total / 1e9


def machine_cpu_times():
    """(busy, softirq, total) jiffies of all CPUs from /proc/stat."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (values + [0] * 8)[:8]
    total = user + nice + system + idle + iowait + irq + softirq + steal
    return total - idle - iowait, softirq, total


def pin_cpus(role):
    """--pin: the daemons (distributor, servers) on the first core, the client processes (source,
    clients) on the others; None on a one-core machine."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return None
    return {cores[0]} if role == "daemon" else set(cores[1:])


# --realtime: the seed reports ran the daemons under `chrt -f 55` and the test clients under
# `chrt -f 49`; deploy/*.service.d/10-realtime.conf.example gives the daemons the same.
REALTIME_PRIORITY = {"daemon": 55, "client": 49}


def start_settings(cpus, priority):
    """The child's CPU set and SCHED_FIFO priority, applied between fork and exec."""
    if not cpus and not priority:
        return None

    def apply():
        if cpus:
            os.sched_setaffinity(0, cpus)
        if priority:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    return apply


class Process:
    def __init__(self, name, argv, log_dir, commands, cpus=None, priority=0):
        self.name = name
        self.argv = argv
        self.log_path = os.path.join(log_dir, name + ".log")
        self.out_path = os.path.join(log_dir, name + ".out")
        self._log = open(self.log_path, "wb")
        self._out = open(self.out_path, "wb")
        self.cpus = cpus
        commands.append((f"taskset -c {','.join(map(str, sorted(cpus)))} " if cpus else "")
                        + (f"chrt -f {priority} " if priority else "") + " ".join(argv))
        self.popen = subprocess.Popen(argv, stdout=self._out, stderr=self._log,
                                      preexec_fn=start_settings(cpus, priority))
        self.cpu_marks = {}
        self.wait_marks = {}  # run-queue seconds: CPU a process wanted and did not get

    @property
    def pid(self):
        return self.popen.pid

    def mark_cpu(self, label):
        value = cpu_seconds(self.pid)
        if value is not None:
            self.cpu_marks[label] = value
        waited = runnable_wait_seconds(self.pid)
        if waited is not None:
            self.wait_marks[label] = waited

    def running(self):
        return self.popen.poll() is None

    def wait(self, timeout):
        return self.popen.wait(timeout=timeout)

    def terminate(self, timeout=10):
        """SIGTERM and wait for the exit (the tools print their summary on the way out)."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass

    def stop(self):
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._log.close()
        self._out.close()

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def json_line(self, kind, where="both"):
        """The last JSON object of type `kind` printed by the process, or None."""
        found = None
        paths = {"out": [self.out_path], "log": [self.log_path], "both": [self.out_path, self.log_path]}[where]
        for path in paths:
            with open(path, "rb") as f:
                for line in f.read().decode(errors="replace").splitlines():
                    if line.startswith('{"type":"' + kind + '"'):
                        found = json.loads(line)
        return found

    def wait_for_log(self, text, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log_text():
                return
            if not self.running():
                break
            time.sleep(0.02)
        raise RuntimeError(f"{self.name}: '{text}' not logged in {timeout} s:\n{self.log_text()[-2000:]}")


class Stack:
    """Start with start_core(); add source and clients; stop() ends every process by PID."""

    def __init__(self, binaries, profile_dir, log_dir, tls=False, client="sdk", source="sdk", pin=False,
                 realtime=False, sdk_io_threads=1, sched_slice_us=0, busy_poll_us=0, ws_conflate_ms=None):
        self.bin = binaries
        self.client_kind = client  # "sdk": mdcast-bench-consumer (libmdcast); "lean": mdcast-client;
        #                            "ws": mdcast-bench-ws-consumer on the servers' WebSocket ports
        self.source_kind = source  # "sdk": mdcast-bench-publisher (libmdcast); "lean": mdcast-source;
        #                            "interactive": mdcast-source --interactive
        self.pin = pin
        self.realtime = realtime
        self.sdk_io_threads = sdk_io_threads  # mdcast-bench-consumer --io-threads
        # --sched-slice-us: the daemons' process.sched_slice_us and the SDK programs' option (the
        # lean and WebSocket tools keep the kernel's default).
        self.sched_slice_us = sched_slice_us
        # --busy-poll-us: the daemons' idle strategy (distributor.busy_poll_us,
        # backbone.busy_poll_us) and the SDK consumer's ConsumerOptions::busy_poll_us.
        self.busy_poll_us = busy_poll_us
        # ws clients: None, or the servers stamp JSON messages (clients.ws_publish_time) and,
        # when > 0, the clients ask for TimeConflated at this many ms (--conflate-ms).
        self.ws_conflate_ms = ws_conflate_ms
        self.tls = make_certificates(log_dir) if tls else None
        self.profile_dir = profile_dir
        self.log_dir = log_dir
        os.makedirs(log_dir, exist_ok=True)
        self.processes = []
        self.commands = []
        self.group = f"239.255.{random.randint(1, 254)}.{random.randint(1, 254)}"
        self.backbone_port = free_port(socket.SOCK_DGRAM)
        self.publisher_port = free_port()
        self.client_base_port = None
        self.ws_base_port = None
        self.servers = []
        self._admin_ports = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def _config(self, name, overrides):
        if self.sched_slice_us:
            overrides = {**overrides, "process.sched_slice_us": self.sched_slice_us}
        with open(os.path.join(self.profile_dir, name + ".yaml")) as f:
            text = merge_config(f.read(), overrides)
        path = os.path.join(self.log_dir, name + ".yaml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def start(self, name, argv, role="client"):
        p = Process(name, argv, self.log_dir, self.commands, pin_cpus(role) if self.pin else None,
                    REALTIME_PRIORITY[role] if self.realtime else 0)
        self.processes.append(p)
        return p

    def start_core(self, servers, server_overrides=None, distributor_overrides=None):
        """`*_overrides`: more {"section.key": value} for the configs (the scale scenario's limits)."""
        admin = {"admin.enabled": True, "admin.port": 0, "admin.address": "127.0.0.1"}  # the hop histograms
        cfg = self._config("distributor", {"publishers.port": self.publisher_port, "backbone.group": self.group,
                                           "backbone.port": self.backbone_port, "backbone.interface": "127.0.0.1",
                                           "backbone.ttl": 0, **admin, **self._spin("distributor"),
                                           **(distributor_overrides or {})})
        distributor = self.start("distributor", [self.bin["distributor"], "--config", cfg], "daemon")
        wait_for_port(self.publisher_port, distributor)
        # A port found free may be taken before a server binds it (another process's
        # connection is given it): such a start is tried again on other ports.
        for attempt in range(3):
            started = self._start_servers(servers, admin, server_overrides)
            try:
                for n, server in enumerate(started):
                    wait_for_port(self.client_base_port + n, server)
                    if self.ws_base_port:
                        wait_for_port(self.ws_base_port + n, server)
                    server.wait_for_log("clients on", 10)  # its own listener, not another's
                break
            except RuntimeError:
                if attempt == 2 or not any("Address already in use" in p.log_text() for p in started):
                    raise
                for p in started:
                    p.stop()
        self.servers.extend(started)
        self.distributor = distributor

    def _start_servers(self, servers, admin, server_overrides):
        """Starts `servers` instances on fresh client (and WebSocket) ports; returns them."""
        self.client_base_port = free_port(consecutive=servers)
        overrides = {**admin, **self._spin("backbone"), "clients.port": self.client_base_port,
                     "clients.max_connections": BENCH_MAX_CONNECTIONS,
                     "backbone.group": self.group, "backbone.port": self.backbone_port,
                     "backbone.interface": "127.0.0.1"}
        if self.client_kind == "ws":  # a WebSocket port per instance, fields named by etc/fields.dict
            self.ws_base_port = free_port(consecutive=servers)
            overrides.update({"clients.ws_port": self.ws_base_port, "clients.ws_dictionary_file":
                              os.path.join(os.path.dirname(os.path.dirname(self.profile_dir)), "fields.dict"),
                              "clients.ws_publish_time": self.ws_conflate_ms is not None})
        if self.tls:  # TLS only, on the same ports
            overrides.update({"clients.plaintext": False, "clients.tls": True, "clients.tls_port": self.client_base_port,
                              "tls.cert_file": self.tls["cert"], "tls.key_file": self.tls["key"]})
        cfg = self._config("server", {**overrides, **(server_overrides or {})})
        return [self.start(f"server{n}", [self.bin["server"], "--config", cfg, "--instance", str(n)], "daemon")
                for n in range(1, servers + 1)]

    def _spin(self, section):
        return {f"{section}.busy_poll_us": self.busy_poll_us} if self.busy_poll_us else {}

    def admin_ports(self):
        """{"distributor": port, "servers": [port, ...]}: the admin ports the daemons logged."""
        if self._admin_ports is None:
            self._admin_ports = {"distributor": admin_port(self.distributor),
                                 "servers": [admin_port(s) for s in self.servers]}
        return self._admin_ports

    def server_list(self):
        """The clients' --server list: the binary ports, or the WebSocket ports for ws clients."""
        base = self.ws_base_port if self.client_kind == "ws" else self.client_base_port
        return ",".join(f"127.0.0.1:{base + n}" for n in range(len(self.servers)))

    def source(self, *args):
        binary = self.bin["sdk-source" if self.source_kind == "sdk" else "source"]
        mode = ["--interactive"] if self.source_kind == "interactive" else []
        return self.start("source", [binary, *mode, "--distributor", f"127.0.0.1:{self.publisher_port}",
                                     *self._slice_args(self.source_kind == "sdk"), *map(str, args)])

    def _slice_args(self, sdk_program):
        return ["--sched-slice-us", str(self.sched_slice_us)] if sdk_program and self.sched_slice_us else []

    def replay(self, *args):
        """mdcast-replay as the source (mdcast-bench --replay)."""
        return self.start("source", [self.bin["replay"], *map(str, args[:1]), "--distributor",
                                     f"127.0.0.1:{self.publisher_port}", *map(str, args[1:])])

    def client(self, name, *args):
        tls = ["--tls", "--ca-file", self.tls["ca"]] if self.tls else []
        binary = self.bin[{"sdk": "sdk-client", "ws": "ws-client"}.get(self.client_kind, "client")]
        threads = ["--io-threads", str(self.sdk_io_threads)] if self.client_kind == "sdk" else []
        if self.client_kind == "sdk" and self.busy_poll_us:
            threads += ["--busy-poll-us", str(self.busy_poll_us)]
        if self.client_kind == "ws" and self.ws_conflate_ms:
            threads += ["--conflate-ms", str(self.ws_conflate_ms)]
        return self.start(name, [binary, "--server", self.server_list(), *tls, *threads,
                                 *self._slice_args(self.client_kind == "sdk"), *map(str, args)])

    def stop(self):
        for p in reversed(self.processes):
            p.stop()


def make_certificates(directory):
    """A throw-away CA and a server certificate for 127.0.0.1 (openssl CLI, P-256)."""
    os.makedirs(directory, exist_ok=True)

    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True, timeout=30)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=mdcast-bench CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    with open(os.path.join(directory, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-out", "server.pem", "-extfile", "server.ext")
    return {"ca": os.path.join(directory, "ca.pem"), "cert": os.path.join(directory, "server.pem"),
            "key": os.path.join(directory, "server.key")}


def wait_for_port(port, process, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process.running():
            raise RuntimeError(f"{process.name} exited early:\n{process.log_text()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.01)
    raise RuntimeError(f"{process.name} did not listen on {port}")
