"""--check-config tells the truth: every start-up check that needs no running
system (multicast group, a listener, ports, sizes, the TLS, users and key files,
the web page, the log file's directory, addresses of this host, ports apart from
the lower instances') fails it with exit status 2 and file:line, all in one pass
(a bad value does not hide the other problems); the daemon itself refuses the same
file with status 2 (the units' RestartPreventExitStatus). (The example configs
in etc/ are checked against the schema by tests/etc/example_files_test.cpp.)"""
import os
import subprocess
import tempfile

from harness import BIN, ETC, check, run


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
    # A window that cannot hold what servers may still ask for (issue 27, item 9).
    ("distributor", "backbone:\n  retransmit_window_ms: 1000\n", "backbone.retransmit_window_ms", 2),
    ("distributor", "backbone:\n  data_rate_bytes_per_s: 60000000\n  retransmit_window_bytes: 67108864\n",
     "backbone.retransmit_window_bytes", 3),
    ("server", "process:\n  sched_slice_us: 50\n", "process.sched_slice_us", 2),
    ("distributor", "process:\n  sched_slice_us: 200000\n", "process.sched_slice_us", 2),
    ("server", "clients:\n  ws_port: 15556\n  ws_dictionary_file: DICT\n  ws_web_dir: DIR\n",
     "clients.ws_web_dir", 4),
    ("server", "log:\n  file: USERS/logs/{name}.log\n", "log.file", 2),
    ("distributor", "log:\n  file: USERS/{name}.log\n", "log.file", 2),
    ("server", "clients:\n  address: 192.0.2.1\n", "clients.address", 2),
    ("server", "admin:\n  address: 198.51.100.7\n", "admin.address", 2),
    ("distributor", "publishers:\n  address: 203.0.113.9\n", "publishers.address", 2),
    ("distributor", "backbone:\n  interface: 192.0.2.44\n", "backbone.interface", 2),
    ("server", "upstream:\n  kind: tcp\n", "upstream.parents", 0),
    ("server", "upstream:\n  parents: [\"hub-a\"]\n", "upstream.parents", 2),
    ("server", "upstream:\n  heartbeat_interval_ms: 5000\n", "upstream.heartbeat_timeout_ms", 0),
    ("server", "upstream:\n  password_file: /nonexistent/edge.password\n", "upstream.password_file", 2),
    ("server", "upstream:\n  tls: true\n  tls_ca_file: /nonexistent/ca.pem\n", "upstream.tls", 2),
]


def test_each_bad_config_exits_2_naming_key_and_line():
    with tempfile.TemporaryDirectory(prefix="mdcast-checks-") as directory:
        users = write(directory, "users.yaml", "users:\n  alice: {password: not-a-hash}\n")
        for daemon, text, key, line in BAD_CONFIGS:
            text = text.replace("USERS", users).replace("DIR", directory)
            path = write(directory, f"{daemon}.yaml", text.replace("DICT", os.path.join(ETC, "fields.dict")))
            code, out, err = call(BIN[daemon], "--config", path, "--check-config")
            where = f"{path}:{line}:" if line else f"{path}: "
            check(code == 2 and "configuration OK" not in out, f"{daemon} {text!r}: exit {code}\n{out}{err}")
            check(where in err and f"key '{key}'" in err, f"{daemon} {text!r}: no error at {where} for {key}:\n{err}")


def test_the_daemon_itself_refuses_a_bad_config_with_status_2():
    with tempfile.TemporaryDirectory(prefix="mdcast-checks-") as directory:
        for daemon, text in (("server", "backbone:\n  group: 10.1.2.3\nclients:\n  port: 0\n"),
                             ("distributor", "publishers:\n  port: 0\n  plaintext: false\n"),
                             ("server", "clients:\n  port: 0\n  address: 192.0.2.1\n"),
                             ("distributor", "publishers:\n  port: 0\nlog:\n  file: /dev/null/x/{name}.log\n")):
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


def test_every_problem_in_one_pass():
    """A bad value, a broken rule and a file that does not load, all reported by one run."""
    with tempfile.TemporaryDirectory(prefix="mdcast-checks-") as directory:
        path = write(directory, "server.yaml", "clients:\n  max_connections: lots\nbackbone:\n  group: 10.1.2.3\n"
                                               "auth:\n  users_file: /nonexistent/users.yaml\n")
        code, _, err = call(BIN["server"], "--config", path, "--check-config")
        for line, key in ((2, "clients.max_connections"), (4, "backbone.group"), (6, "auth.users_file")):
            check(f"{path}:{line}:" in err and f"key '{key}'" in err, f"no error for {key} at line {line}:\n{err}")
        check(code == 2 and "3 configuration error(s)" in err, f"exit {code}:\n{err}")


def test_ports_of_an_instance_must_miss_the_lower_instances():
    """clients.ws_port one above clients.port: instance 2's client port is instance 1's
    WebSocket port, so instance 2 could never start beside instance 1."""
    with tempfile.TemporaryDirectory(prefix="mdcast-checks-") as directory:
        path = write(directory, "server.yaml", f"clients:\n  port: 15560\n  ws_port: 15561\n"
                                               f"  ws_dictionary_file: {os.path.join(ETC, 'fields.dict')}\n")
        code, out, _ = call(BIN["server"], "--config", path, "--instance", "1", "--check-config")
        check(code == 0 and "configuration OK" in out, f"instance 1 alone is fine: {code} {out}")
        code, _, err = call(BIN["server"], "--config", path, "--instance", "2", "--check-config")
        check(code == 2 and f"{path}:2:" in err and "key 'clients.port'" in err and
              "clients.ws_port of instance 1" in err, f"instance 2: {code} {err}")


if __name__ == "__main__":
    run([test_each_bad_config_exits_2_naming_key_and_line, test_the_daemon_itself_refuses_a_bad_config_with_status_2,
         test_instance_offset_past_65535_is_refused, test_every_problem_in_one_pass,
         test_ports_of_an_instance_must_miss_the_lower_instances])
