"""--check-config tells the truth: every start-up check that needs no running
system (multicast group, a listener, ports, sizes, the TLS, users and key files)
fails it with exit status 2 and file:line; the daemon itself refuses the same
file with status 2 (the units' RestartPreventExitStatus). (The example configs
in etc/ are checked against the schema by tests/etc/example_files_test.cpp.)"""
import os
import subprocess
import tempfile

from harness import BIN, check, run


def call(*argv, timeout=20):
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout, done.stderr


def write(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    return path


# (daemon, config text, key the error names, line of that key's value or None for a default)
BAD_CONFIGS = [
    ("server", "backbone:\n  group: 10.1.2.3\n", "backbone.group", 2),
    ("distributor", "backbone:\n  group: 192.168.0.1\n", "backbone.group", 2),
    ("server", "backbone:\n  extra_groups: [\"239.1.1.1:15002\", \"10.0.0.1:15003\"]\n",
     "backbone.extra_groups", 2),
    ("server", "clients:\n  plaintext: false\n", "clients.plaintext", 2),
    ("distributor", "publishers:\n  plaintext: false\n", "publishers.plaintext", 2),
    ("server", "clients:\n  tls: true\n  tls_port: 15555\ntls:\n  cert_file: /nonexistent/cert.pem\n"
               "  key_file: /nonexistent/key.pem\n", "tls.cert_file", 5),
    ("server", "clients:\n  port: 15555\nadmin:\n  port: 15555\n", "admin.port", 4),
    ("server", "output:\n  max_bytes: 67108864\n  pool_bytes: 1048576\n", "output.max_bytes", 2),
    ("server", "output:\n  guaranteed_bytes: 1048576\n  max_bytes: 65536\n", "output.guaranteed_bytes", 2),
    ("server", "cache:\n  enable_cache: false\noutput:\n  slow_consumer_policy: conflate\n",
     "output.slow_consumer_policy", 4),
    ("server", "auth:\n  users_file: USERS\n", "auth.users_file", 2),
    ("distributor", "backbone:\n  key_file: /nonexistent/backbone.key\n", "backbone.key_file", 2),
    ("distributor", "backbone:\n  heartbeat_min_us: 500000\n  heartbeat_max_ms: 100\n",
     "backbone.heartbeat_min_us", 2),
    ("server", "process:\n  sched_slice_us: 50\n", "process.sched_slice_us", 2),
    ("distributor", "process:\n  sched_slice_us: 200000\n", "process.sched_slice_us", 2),
]


def test_each_bad_config_exits_2_naming_key_and_line():
    with tempfile.TemporaryDirectory(prefix="mdcast-checks-") as directory:
        users = write(directory, "users.yaml", "users:\n  alice: {password: not-a-hash}\n")
        for daemon, text, key, line in BAD_CONFIGS:
            path = write(directory, f"{daemon}.yaml", text.replace("USERS", users))
            code, out, err = call(BIN[daemon], "--config", path, "--check-config")
            where = f"{path}:{line}:" if line else f"{path}: "
            check(code == 2 and "configuration OK" not in out, f"{daemon} {text!r}: exit {code}\n{out}{err}")
            check(where in err and f"key '{key}'" in err, f"{daemon} {text!r}: no error at {where} for {key}:\n{err}")


def test_the_daemon_itself_refuses_a_bad_config_with_status_2():
    with tempfile.TemporaryDirectory(prefix="mdcast-checks-") as directory:
        for daemon, text in (("server", "backbone:\n  group: 10.1.2.3\nclients:\n  port: 0\n"),
                             ("distributor", "publishers:\n  port: 0\n  plaintext: false\n")):
            path = write(directory, f"{daemon}.yaml", text)
            code, _, err = call(BIN[daemon], "--config", path)
            check(code == 2 and "not starting" in err, f"{daemon} started or exited {code}:\n{err}")


def test_instance_offset_past_65535_is_refused():
    with tempfile.TemporaryDirectory(prefix="mdcast-checks-") as directory:
        path = write(directory, "server.yaml", "clients:\n  port: 65530\n")
        code, _, err = call(BIN["server"], "--config", path, "--instance", "10", "--check-config")
        check(code == 2 and "past 65535" in err and f"{path}:2:" in err, f"instance 10 of port 65530: {code} {err}")
        code, out, _ = call(BIN["server"], "--config", path, "--instance", "6", "--check-config")
        check(code == 0 and "configuration OK" in out, f"instance 6 of port 65530 is 65535: {code} {out}")


if __name__ == "__main__":
    run([test_each_bad_config_exits_2_naming_key_and_line, test_the_daemon_itself_refuses_a_bad_config_with_status_2,
         test_instance_offset_past_65535_is_refused])
