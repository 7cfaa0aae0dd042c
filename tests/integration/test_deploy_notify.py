"""sd_notify from the daemons, as systemd sees it in a Type=notify unit.

The test plays the service manager: it binds a datagram socket, hands its path to
the daemon in NOTIFY_SOCKET (and WATCHDOG_USEC, as WatchdogSec= would), and reads
what the daemon says: READY=1 with a STATUS once it serves (its port answers at
that moment), WATCHDOG=1 every WATCHDOG_USEC/2, STOPPING=1 on SIGTERM, then a
clean exit. A WATCHDOG_PID naming another process means the watchdog is not ours:
no pings. Without NOTIFY_SOCKET the daemons run as before (every other test).
"""
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from harness import BIN, check, free_port, run

WATCHDOG_USEC = 400_000  # pings expected every 200 ms


class FakeSystemd:
    """The NOTIFY_SOCKET end: collects each datagram as a dict of KEY=VALUE lines."""

    def __init__(self, directory):
        self.path = os.path.join(directory, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.messages = []  # (monotonic time, {key: value})

    def receive(self, timeout):
        """Waits up to `timeout` for one message; returns it or None."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(4096)
        except socket.timeout:
            return None
        fields = dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line)
        self.messages.append((time.monotonic(), fields))
        return fields

    def wait_for(self, key, timeout, process):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = self.receive(max(0.01, deadline - time.monotonic()))
            if message is not None and key in message:
                return message
            check(process.poll() is None or message is not None,
                  f"daemon exited ({process.poll()}) before {key}")
        raise AssertionError(f"no {key} within {timeout} s; got {[m for _, m in self.messages]}")

    def close(self):
        self.sock.close()


@contextlib.contextmanager
def service_manager(name):
    """A private directory with the notify socket in it; both removed afterwards."""
    directory = tempfile.mkdtemp(prefix=f"mdcast-notify-{name}-")
    notify = FakeSystemd(directory)
    try:
        yield directory, notify
    finally:
        notify.close()
        shutil.rmtree(directory, ignore_errors=True)


def daemon_argv(kind, directory):
    """A daemon on free ports and a private multicast group; returns (argv, tcp port)."""
    port = free_port()
    backbone = free_port(socket.SOCK_DGRAM)
    group = f"239.255.{os.getpid() % 250 + 1}.{port % 250 + 1}"
    section = "publishers" if kind == "distributor" else "clients"
    config = os.path.join(directory, f"{kind}.yaml")
    with open(config, "w") as f:
        f.write(f"{section}:\n  port: {port}\nbackbone:\n  group: {group}\n  port: {backbone}\n")
    argv = [BIN[kind], "--config", config]
    if kind == "server":
        argv += ["--instance", "1"]
    return argv, port, config


def start(kind, directory, notify, **env):
    argv, port, config = daemon_argv(kind, directory)
    environment = dict(os.environ, NOTIFY_SOCKET=notify.path, **env)
    log = open(os.path.join(directory, f"{kind}.log"), "wb")
    process = subprocess.Popen(argv, env=environment, stdout=log, stderr=subprocess.STDOUT)
    return process, port, config, log


def stop(process, log):
    if process.poll() is None:
        process.kill()
        process.wait()
    log.close()


def log_of(directory, kind):
    with open(os.path.join(directory, f"{kind}.log"), "rb") as f:
        return f.read().decode(errors="replace")


def ready_watchdog_stopping(kind):
    with service_manager(kind) as (directory, notify):
        check_ready_watchdog_stopping(kind, directory, notify)


def check_ready_watchdog_stopping(kind, directory, notify):
    process, port, config, log = start(kind, directory, notify, WATCHDOG_USEC=str(WATCHDOG_USEC))
    try:
        ready = notify.wait_for("READY", 10, process)
        # READY means serving: the listener is bound before READY is sent.
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        check(ready["READY"] == "1", f"READY={ready['READY']}")
        check(ready.get("STATUS", "").startswith(f"mdcast-{kind}") and config in ready["STATUS"],
              f"STATUS names the daemon and its config: {ready}")
        # Watchdog pings at WATCHDOG_USEC/2 for at least a second.
        first = time.monotonic()
        pings = []
        while time.monotonic() - first < 1.2:
            message = notify.receive(1.0)
            check(message is not None, "watchdog pings stopped")
            if message.get("WATCHDOG") == "1":
                pings.append(notify.messages[-1][0])
        check(len(pings) >= 4, f"{len(pings)} WATCHDOG=1 in 1.2 s, expected ~6")
        gaps = [b - a for a, b in zip(pings, pings[1:])]
        check(max(gaps) < WATCHDOG_USEC / 1e6, f"a ping came late: gaps {gaps}")
        check(min(gaps) > WATCHDOG_USEC / 1e6 / 4, f"pings too often: gaps {gaps}")
        check("systemd watchdog: 400 ms" in log_of(directory, kind), "watchdog not logged")
        # SIGTERM: STOPPING=1 with the reason, then a clean exit.
        process.send_signal(signal.SIGTERM)
        stopping = notify.wait_for("STOPPING", 5, process)
        check(stopping["STOPPING"] == "1" and "SIGTERM" in stopping.get("STATUS", ""),
              f"STOPPING message: {stopping}")
        check(process.wait(timeout=10) == 0, f"exit status {process.returncode}")
    except Exception:
        print(log_of(directory, kind)[-4000:])
        raise
    finally:
        stop(process, log)


def test_distributor_ready_watchdog_stopping():
    ready_watchdog_stopping("distributor")


def test_server_ready_watchdog_stopping():
    ready_watchdog_stopping("server")


def ready_then_silent(kind, name, **env):
    """READY, then no message at all for a second, then STOPPING and a clean exit."""
    with service_manager(name) as (directory, notify):
        process, _, _, log = start(kind, directory, notify, **env)
        try:
            notify.wait_for("READY", 10, process)
            message = notify.receive(1.0)
            check(message is None, f"unexpected message after READY: {message}")
            process.send_signal(signal.SIGTERM)
            notify.wait_for("STOPPING", 5, process)
            check(process.wait(timeout=10) == 0, f"exit status {process.returncode}")
        finally:
            stop(process, log)


def test_watchdog_of_another_process_is_not_pinged():
    ready_then_silent("server", "pid", WATCHDOG_USEC=str(WATCHDOG_USEC), WATCHDOG_PID=str(os.getpid()))


def test_no_watchdog_without_watchdog_usec():
    ready_then_silent("distributor", "nowd")


if __name__ == "__main__":
    run([test_distributor_ready_watchdog_stopping, test_server_ready_watchdog_stopping,
         test_watchdog_of_another_process_is_not_pinged, test_no_watchdog_without_watchdog_usec])
