"""The systemd units in deploy/: what they promise and whether it holds.

- Each unit is Type=notify with a watchdog, restarts on failure (not on exit status 2,
  a configuration error), raises LimitNOFILE, runs as User=mdcast with no capabilities
  and the hardening settings, and reads its config from /etc/mdcast.
- ExecStart names a binary this build makes, with options it accepts: the same command
  line (config from etc/, instance 1) passes --check-config; a bad instance exits 2.
- `systemd-analyze verify` accepts both units and the real-time drop-in examples without
  a single warning, in a private root (a drop-in with a misspelt key is caught, so the
  check can fail); `systemd-analyze security --offline` rates both units 2.0 or better.
- The packaged configs fix the admin ports (distributor 14200, server instance N
  14200 + N), apart from every other port of the host's instances; the scrape jobs of
  the monitoring pack name exactly those ports, and each instance's command line passes
  --check-config.
- Run under strace with publishers and clients connected, the daemons make only system
  calls the units' SystemCallFilter= allows, open only the socket families
  RestrictAddressFamilies= lists, and write files only where ProtectSystem=strict lets them.
"""
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time

import yaml

import harness
from harness import BIN, ETC, check, run

SOURCE = os.environ.get("MDCAST_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "../.."))
DEPLOY = os.path.join(SOURCE, "deploy")
UNITS = {"distributor": "mdcast-distributor.service", "server": "mdcast-server@.service"}
HOST_UNITS = "/lib/systemd/system"


def parse_unit(path):
    """{section: {key: [values in order]}}; comments and blank lines skipped."""
    sections, current = {}, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                current = sections.setdefault(line.strip("[]"), {})
                continue
            key, _, value = line.partition("=")
            current.setdefault(key.strip(), []).append(value.strip())
    return sections


def service(kind):
    return parse_unit(os.path.join(DEPLOY, UNITS[kind]))["Service"]


def seconds(text):
    match = re.fullmatch(r"(\d+)(ms|s|min)?", text)
    check(match is not None, f"not a time span: {text}")
    return int(match.group(1)) * {"ms": 0.001, "s": 1, "min": 60, None: 1}[match.group(2)]


def test_units_promise_notify_watchdog_restart_and_hardening():
    expected = {"Type": "notify", "NotifyAccess": "main", "Restart": "on-failure",
                "RestartPreventExitStatus": "2", "User": "mdcast", "Group": "mdcast",
                "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
                "PrivateTmp": "yes", "PrivateDevices": "yes", "CapabilityBoundingSet": "",
                "AmbientCapabilities": "", "ReadOnlyPaths": "/etc/mdcast",
                "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX AF_NETLINK"}
    for kind in UNITS:
        keys = service(kind)
        for key, value in expected.items():
            check(keys.get(key, [None])[-1] == value, f"{UNITS[kind]}: {key}={keys.get(key)}, want {value}")
        check(1 <= seconds(keys["WatchdogSec"][-1]) <= 60, f"{kind} WatchdogSec={keys.get('WatchdogSec')}")
        check(int(keys["LimitNOFILE"][-1]) >= 65536, f"{kind} LimitNOFILE={keys.get('LimitNOFILE')}")
        # The real-time drop-in needs SCHED_FIFO; RestrictRealtime=yes would forbid it.
        check(keys.get("RestrictRealtime", ["no"])[-1] != "yes", f"{kind}: RestrictRealtime=yes")
        check(keys.get("LogsDirectory") == ["mdcast"], f"{kind}: LogsDirectory={keys.get('LogsDirectory')}")


def exec_start(kind, instance):
    argv = shlex.split(service(kind)["ExecStart"][-1].replace("%i", instance))
    return argv


def test_exec_start_runs_a_built_binary_with_options_it_accepts():
    for kind in UNITS:
        argv = exec_start(kind, "1")
        check(argv[0] == f"/usr/bin/mdcast-{kind}", f"{kind}: ExecStart runs {argv[0]}")
        check(os.path.basename(BIN[kind]) == os.path.basename(argv[0]), f"{argv[0]} is not {BIN[kind]}")
        config = argv[argv.index("--config") + 1]
        check(config == f"/etc/mdcast/{kind}.yaml", f"{kind}: config {config}")
        local = [BIN[kind]] + [a.replace("/etc/mdcast", ETC) for a in argv[1:]] + ["--check-config"]
        done = subprocess.run(local, capture_output=True, text=True, timeout=20)
        check(done.returncode == 0 and "configuration OK" in done.stdout,
              f"{' '.join(local)}: {done.returncode} {done.stdout} {done.stderr}")
    # ExecStartPre checks the same command line (a bad file fails `systemctl start` at once).
    for kind in UNITS:
        pre = shlex.split(service(kind)["ExecStartPre"][-1].replace("%i", "1"))
        check(pre == exec_start(kind, "1") + ["--check-config"], f"{kind}: ExecStartPre={pre}")
    # The instance number comes from the unit name; a bad one is exit status 2, which
    # RestartPreventExitStatus=2 keeps from restarting in a loop.
    check("--instance" in exec_start("server", "7"), "mdcast-server@.service passes no --instance")
    argv = exec_start("server", "0")
    local = [BIN["server"]] + [a.replace("/etc/mdcast", ETC) for a in argv[1:]] + ["--check-config"]
    done = subprocess.run(local, capture_output=True, text=True, timeout=20)
    check(done.returncode == 2 and "instance" in done.stderr, f"instance 0: {done.returncode} {done.stderr}")


def packaged(kind):
    with open(os.path.join(ETC, f"{kind}.yaml")) as f:
        return yaml.safe_load(f)


def host_ports(server, distributor, instances):
    """(what, port) of every TCP port a host running the distributor and server
    instances 1..`instances` with the packaged configs binds."""
    ports = [("distributor admin.port", distributor["admin"]["port"]),
             ("distributor publishers.port", distributor["publishers"]["port"])]
    if distributor["publishers"]["tls"]:
        ports.append(("distributor publishers.tls_port", distributor["publishers"]["tls_port"]))
    for n in range(1, instances + 1):
        ports += [(f"server {n} admin.port", server["admin"]["port"] + n - 1),
                  (f"server {n} clients.port", server["clients"]["port"] + n - 1)]
        if server["clients"]["tls"]:
            ports.append((f"server {n} clients.tls_port", server["clients"]["tls_port"] + n - 1))
        if server["clients"]["ws_port"]:
            ports.append((f"server {n} clients.ws_port", server["clients"]["ws_port"] + n - 1))
    return ports


def test_packaged_admin_ports_are_fixed_and_scraped():
    server, distributor = packaged("server"), packaged("distributor")
    check(distributor["admin"]["port"] == 14200 and server["admin"]["port"] == 14201,
          f"admin ports {distributor['admin']['port']}, {server['admin']['port']}: not the documented 14200, 14201")
    with open(os.path.join(DEPLOY, "monitoring/prometheus-scrape.yml")) as f:
        jobs = {job["job_name"]: [t for c in job["static_configs"] for t in c["targets"]]
                for job in yaml.safe_load(f)["scrape_configs"]}
    check(jobs.get("mdcast-distributor") == [f"127.0.0.1:{distributor['admin']['port']}"],
          f"distributor scrape targets {jobs.get('mdcast-distributor')}")
    servers = jobs.get("mdcast-server", [])
    check(len(servers) >= 2 and servers == [f"127.0.0.1:{server['admin']['port'] + n}" for n in range(len(servers))],
          f"server scrape targets {servers} are not admin.port + N - 1 of instances 1..{len(servers)}")
    ports = host_ports(server, distributor, 64)  # --instance allows 1..64
    taken = {}
    for what, port in ports:
        check(port not in taken, f"{what} and {taken.get(port)} are both port {port}")
        taken[port] = what
    # Each instance's unit command line passes --check-config, whose ports are checked
    # against the lower instances'.
    for n in range(1, len(servers) + 1):
        argv = exec_start("server", str(n))
        local = [BIN["server"]] + [a.replace("/etc/mdcast", ETC) for a in argv[1:]] + ["--check-config"]
        done = subprocess.run(local, capture_output=True, text=True, timeout=20)
        check(done.returncode == 0, f"instance {n}: {done.returncode} {done.stderr}")


def make_root(directory, drop_in_lines=()):
    """A root for `systemd-analyze --root`: the host's units (for the targets ours depend
    on), ours in /etc/systemd/system with the drop-in examples enabled, our binaries in
    /usr/bin beside kill (ExecReload=). `drop_in_lines` are appended to the server's drop-in."""
    root = os.path.join(directory, "root")
    shutil.copytree(HOST_UNITS, os.path.join(root, HOST_UNITS.lstrip("/")), symlinks=True)
    units = os.path.join(root, "etc/systemd/system")
    bin_dir = os.path.join(root, "usr/bin")
    os.makedirs(units)
    os.makedirs(bin_dir)
    for kind, unit in UNITS.items():
        shutil.copy(os.path.join(DEPLOY, unit), units)
        os.makedirs(os.path.join(units, unit + ".d"))
        with open(os.path.join(DEPLOY, unit + ".d", "10-realtime.conf.example")) as f:
            text = f.read()
        if kind == "server":
            text += "".join(line + "\n" for line in drop_in_lines)
        with open(os.path.join(units, unit + ".d", "10-realtime.conf"), "w") as f:
            f.write(text)
        shutil.copy(BIN[kind], bin_dir)
    shutil.copy("/usr/bin/kill", bin_dir)  # ExecReload= (procps, on every Debian host)
    return root


def analyze(root, *args):
    done = subprocess.run(["systemd-analyze", *args, f"--root={root}"], capture_output=True,
                          text=True, timeout=60)
    return done.returncode, (done.stdout + done.stderr).strip()


def systemd_analyze_available():
    if shutil.which("systemd-analyze") is None:
        print("SKIP systemd-analyze not installed (Debian package systemd)", flush=True)
        return False
    return True


def test_systemd_analyze_verify_accepts_units_and_drop_ins():
    if not systemd_analyze_available():
        return
    directory = tempfile.mkdtemp(prefix="mdcast-units-")
    try:
        root = make_root(os.path.join(directory, "good"))
        for unit in ("mdcast-distributor.service", "mdcast-server@1.service", "mdcast-server@12.service"):
            code, output = analyze(root, "verify", unit)
            check(code == 0 and output == "", f"systemd-analyze verify {unit}: {code}\n{output}")
        # The drop-ins are really read: a misspelt key in one is reported.
        root = make_root(os.path.join(directory, "bad"), ["CPUSchedulingPriorty=55"])
        code, output = analyze(root, "verify", "mdcast-server@1.service")
        check("CPUSchedulingPriorty" in output, f"verify missed a bad key in the drop-in: {code} {output}")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_systemd_analyze_security_rates_units_ok():
    if not systemd_analyze_available():
        return
    directory = tempfile.mkdtemp(prefix="mdcast-security-")
    try:
        root = make_root(directory)
        for unit in ("mdcast-distributor.service", "mdcast-server@1.service"):
            # --threshold is the exposure level times ten: fail above 2.0.
            code, output = analyze(root, "security", "--offline=yes", "--threshold=20", unit)
            level = re.search(r"Overall exposure level for \S+: (\S+)", output)
            check(code == 0 and level is not None, f"{unit} exposure above 2.0:\n{output[-3000:]}")
            print(f"  {unit}: exposure {level.group(1)}", flush=True)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


# ---- system calls, socket families and writes, under strace ---------------------------

def syscall_groups():
    """{"@group": set of members} from `systemd-analyze syscall-filter`."""
    text = subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True, text=True,
                          timeout=30, check=True).stdout
    groups, current = {}, None
    for line in text.splitlines():
        if line.startswith("@"):
            current = groups.setdefault(line.strip(), set())
        elif line.strip() and not line.strip().startswith("#") and current is not None:
            current.add(line.strip())
    return groups


def expand(name, groups):
    out = set()
    for member in groups[name]:
        out |= expand(member, groups) if member.startswith("@") else {member}
    return out


def allowed_syscalls(kind):
    """The set SystemCallFilter= lines allow: allow lists add, ~deny lists remove."""
    groups = syscall_groups()
    allowed = set()
    for line in service(kind)["SystemCallFilter"]:
        deny = line.startswith("~")
        names = set()
        for item in line.lstrip("~").split():
            names |= expand(item, groups) if item.startswith("@") else {item}
        allowed = allowed - names if deny else allowed | names
    return allowed


STRACE_LINE = re.compile(r"^\d+\s+([a-z0-9_]+)\((.*)")


def traced(stack, kind, argv, trace_path):
    # LeakSanitizer cannot run under ptrace: a sanitized build checks leaks everywhere else.
    env = ["env", "ASAN_OPTIONS=detect_leaks=0"] if os.environ.get("MDCAST_SANITIZED") else []
    return stack.start(kind, ["strace", "-f", "-qq", "-s", "256", "-o", trace_path, *env, *argv])


def stop_traced(process):
    """SIGTERM to the daemon (strace's child; strace itself would only detach), then
    strace exits with the daemon's status. SIGKILL if it does not stop in time."""
    children = []
    for task in os.listdir(f"/proc/{process.popen.pid}/task"):
        with open(f"/proc/{process.popen.pid}/task/{task}/children") as f:
            children += [int(pid) for pid in f.read().split()]
    for pid in children:
        os.kill(pid, signal.SIGTERM)
    try:
        return process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        for pid in children:
            os.kill(pid, signal.SIGKILL)
        return process.wait(timeout=20)


def check_trace(kind, trace_path):
    allowed = allowed_syscalls(kind)
    used, families, writes = set(), set(), set()
    with open(trace_path) as f:
        for line in f:
            match = STRACE_LINE.match(line)
            if not match:
                continue
            name, args = match.groups()
            used.add(name)
            if name == "socket":
                families.add(args.split(",")[0])
            if name in ("open", "openat") and re.search(r"O_(WRONLY|RDWR|CREAT)", args):
                writes.add(re.search(r'"([^"]*)"', args).group(1))
    check(len(used) > 20, f"{kind}: only {sorted(used)} traced")
    check(used <= allowed, f"{kind} calls what SystemCallFilter= forbids: {sorted(used - allowed)}")
    allowed_families = set(service(kind)["RestrictAddressFamilies"][-1].split())
    check(families <= allowed_families, f"{kind} opens {families - allowed_families} sockets")
    # ProtectSystem=strict: only /dev, the private /tmp and LogsDirectory are writable.
    bad = [p for p in writes if not p.startswith(("/dev/", "/tmp/", "/var/tmp/", "/var/log/mdcast/"))]
    check(not bad, f"{kind} opens for writing outside its writable paths: {bad}")
    print(f"  {kind}: {len(used)} distinct system calls, families {sorted(families)}", flush=True)


def test_daemons_stay_inside_the_units_filters():
    if not systemd_analyze_available():
        return
    if shutil.which("strace") is None:
        print("SKIP strace not installed (Debian package strace)", flush=True)
        return
    probe = subprocess.run(["strace", "-qq", "-o", "/dev/null", "true"], capture_output=True, timeout=20)
    if probe.returncode != 0:
        print(f"SKIP strace cannot trace here: {probe.stderr.decode().strip()}", flush=True)
        return
    stack = harness.Stack("units-strace")
    try:
        with stack:  # stops the processes, and prints their logs on failure
            trace_stack(stack)
    finally:
        shutil.rmtree(stack.dir, ignore_errors=True)


def trace_stack(stack):
    """Distributor and server under strace, a source and a client through them, then the
    traces checked against the units."""
    traced_processes = []
    try:
        run_traced(stack, traced_processes)
    finally:
        for process in traced_processes:
            if process.popen.poll() is None:
                stop_traced(process)


def run_traced(stack, traced_processes):
    traces = {kind: os.path.join(stack.dir, f"{kind}.strace") for kind in UNITS}
    distributor_cfg = stack.write("distributor.yaml", f"publishers:\n  port: {stack.publisher_port}\n"
                                  f"backbone:\n  group: {stack.group}\n  port: {stack.backbone_port}\n")
    client_port = harness.free_port()
    server_cfg = stack.write("server.yaml", f"clients:\n  port: {client_port}\n"
                             f"backbone:\n  group: {stack.group}\n  port: {stack.backbone_port}\n")
    distributor = traced(stack, "distributor", [BIN["distributor"], "--config", distributor_cfg],
                         traces["distributor"])
    traced_processes.append(distributor)
    harness.wait_for_port(stack.publisher_port, distributor, timeout=20)
    server = traced(stack, "server", [BIN["server"], "--config", server_cfg, "--instance", "1"],
                    traces["server"])
    traced_processes.append(server)
    harness.wait_for_port(client_port, server, timeout=20)
    stack.client_ports[1] = client_port
    source = stack.source("--items", "20", "--rate", "200", "--duration", "4")
    client = stack.client(1, "--item-count", "20", "--duration", "3")
    check(client.wait(timeout=30) == 0, f"client failed:\n{client.log_text()[-2000:]}")
    source.wait(timeout=30)
    for process in (server, distributor):
        check(stop_traced(process) == 0, f"{process.name} did not exit cleanly:\n{process.log_text()[-2000:]}")
    for kind, path in traces.items():
        check_trace(kind, path)


if __name__ == "__main__":
    run([test_units_promise_notify_watchdog_restart_and_hardening,
         test_exec_start_runs_a_built_binary_with_options_it_accepts,
         test_packaged_admin_ports_are_fixed_and_scraped,
         test_systemd_analyze_verify_accepts_units_and_drop_ins,
         test_systemd_analyze_security_rates_units_ok,
         test_daemons_stay_inside_the_units_filters])
