"""Every binary: --help, --version, and for the daemons --check-config and
--help-config; configuration errors name the key and file:line, all at once."""
import os
import subprocess
import tempfile

from harness import BIN, ETC, check, run


def call(*argv):
    done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    return done.returncode, done.stdout, done.stderr


def test_help_and_version():
    for name, path in BIN.items():
        code, out, err = call(path, "--help")
        check(code == 0 and "--help" in out and "mdcast" in out, f"{name} --help: {code} {out} {err}")
        code, out, _ = call(path, "--version")
        check(code == 0 and out.startswith(f"mdcast-{name} ") and out.strip()[-1].isdigit(), f"{name} --version: {out}")
        code, _, err = call(path, "--no-such-option")
        check(code == 2 and "--no-such-option" in err and "--help" in err, f"{name} bad option: {code} {err}")


def test_example_configs_are_valid():
    for daemon in ("distributor", "server"):
        code, out, err = call(BIN[daemon], "--config", os.path.join(ETC, f"{daemon}.yaml"), "--check-config")
        check(code == 0 and "configuration OK" in out, f"{daemon} example config: {out} {err}")
        code, out, _ = call(BIN[daemon], "--help-config")
        check(code == 0 and "backbone.group" in out and "log.level" in out, f"{daemon} --help-config: {out}")
        # Every key's heading ends with its reload flag.
        headings = [line for line in out.splitlines() if line and not line[0].isspace() and "; default " in line]
        check(len(headings) > 40 and all(line.endswith(("; reloads on SIGHUP)", "; needs a restart)"))
                                         for line in headings), f"{daemon} --help-config reload flags: {out}")
        check('log.level (choice, one of: trace, debug, info, warn, error, off; default "info"; reloads on SIGHUP)'
              in out and "backbone.port (integer, range 1..65535; default 15001; needs a restart)" in out,
              f"{daemon} --help-config: {out}")


def test_config_errors_are_all_reported_with_file_and_line():
    text = "clients:\n  port: 99999\n  max_conections: 5\noutput:\n  timed_writes: maybe\nbackbone:\n  group: not-an-ip\n"
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
    code, out, err = call(BIN["server"], "--config", f.name, "--check-config")
    os.unlink(f.name)
    check(code == 2, f"bad config accepted: {code} {out}")
    for line, key in ((2, "clients.port"), (3, "clients.max_conections"), (5, "output.timed_writes"),
                      (7, "backbone.group")):
        check(f"{f.name}:{line}:" in err and key in err, f"error for {key} at line {line} missing:\n{err}")
    check("did you mean 'clients.max_connections'" in err, f"no suggestion for the misspelt key:\n{err}")
    check("4 configuration error(s)" in err, f"not all errors reported at once:\n{err}")


def test_server_instances_take_their_own_port_and_name():
    import socket
    import time
    from harness import free_port
    base = free_port()
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(f"clients:\n  port: {base}\nbackbone:\n  group: 239.255.250.1\n  port: {free_port(socket.SOCK_DGRAM)}\n")
    p = subprocess.Popen([BIN["server"], "--config", f.name, "--instance", "3"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", base + 2), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise AssertionError("instance 3 does not listen on clients.port + 2")
    finally:
        p.terminate()
        out = p.communicate(timeout=10)[0]
        os.unlink(f.name)
    check("[mdcast-server.3]" in out and f"127.0.0.1:{base + 2}" in out, f"instance name or port not logged:\n{out}")


def test_output_limits_must_fit_the_pool():
    """(max_bytes - guaranteed_bytes) x expected_clients may not exceed pool_bytes: the old
    throughput profile (40 MB per client, 256 MB pool, 50 clients) is refused, by --check-config
    and at start, both with exit code 2; every shipped profile passes."""
    old = ("output:\n  guaranteed_bytes: 6553600\n  pool_bytes: 262144000\n  max_bytes: 40960000\n"
           "  expected_clients: 50\n")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(old)
    try:
        for extra in (["--check-config"], []):
            code, out, err = call(BIN["server"], "--config", f.name, *extra)
            check(code == 2 and "output.max_bytes" in err and "output.expected_clients" in err
                  and "at most 11796480" in err, f"{extra}: oversized max_bytes accepted: {code} {out} {err}")
    finally:
        os.unlink(f.name)
    for profile in sorted(os.listdir(os.path.join(ETC, "profiles"))):
        path = os.path.join(ETC, "profiles", profile, "server.yaml")
        code, out, err = call(BIN["server"], "--config", path, "--check-config")
        check(code == 0 and "configuration OK" in out, f"profile {profile}: {code} {out} {err}")


def test_missing_config_file():
    code, _, err = call(BIN["distributor"], "--config", "/nonexistent/mdcast.yaml", "--check-config")
    check(code == 2 and "/nonexistent/mdcast.yaml" in err, f"missing file: {code} {err}")


if __name__ == "__main__":
    run([test_help_and_version, test_example_configs_are_valid,
         test_config_errors_are_all_reported_with_file_and_line, test_server_instances_take_their_own_port_and_name,
         test_output_limits_must_fit_the_pool,
         test_missing_config_file])
