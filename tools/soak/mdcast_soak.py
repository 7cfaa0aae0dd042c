#!/usr/bin/env python3
"""Soak and fault runner: one local mdcast stack under load for a bounded time,
with faults on a schedule, checked as it runs.

The stack (a distributor, --servers server instances, an mdcast-source, all on
loopback with private ports and a private 239.255.x.y group) runs with backbone
loss injected (the testing.loss.* keys: the distributor drops --loss of its data
packets on send and of the NAKs it receives; servers drop --loss of the NAKs they
send). On it:

- churn: short-lived mdcast-client processes, each subscribing to a random subset
  of the items on a random server for a few seconds and then disconnecting; each
  one's summary (updates, gaps, duplicates) is collected;
- watchers: one long-lived mdcast-client per server (--output json) whose every
  refresh, update and status the runner follows item by item;
- faults: each daemon gets a kill -9 (then a restart with the same command line)
  and a SIGSTOP (SIGCONT after --stop-seconds) at evenly spaced, shuffled times,
  the last one well before the end so the stack can recover;
- samples, every --sample-interval: RSS and open descriptors of every daemon and
  the queue gauges of its /metrics.

It fails (exit 1) on: a gap or a duplicate seen by any client; a silent stale item
(a watcher's item that is current as far as its client knows, on a server that
has run throughout, and has had no update for --stale-seconds); an item not
current again at the end; growth of a daemon's RSS or descriptors over one life
(one run between restarts) of at least --growth-life-seconds; a daemon that
exits by itself. Figures go to stdout and to OUT/soak.json.

  tools/soak/mdcast_soak.py --build build --duration 60
"""
import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from bench_stack import Process, free_port, merge_config, wait_for_port  # noqa: E402

QUEUE_WORDS = ("queue", "pending", "buffered", "backlog", "window", "pool_borrowed", "subscriptions", "clients")


def binaries(build):
    def pick(env, relative):
        return os.environ.get(env) or os.path.join(build, relative)
    return {"distributor": pick("MDCAST_DISTRIBUTOR", "distributor/mdcast-distributor"),
            "server": pick("MDCAST_SERVER", "server/mdcast-server"),
            "source": pick("MDCAST_SOURCE", "tools/mdcast-source"),
            "client": pick("MDCAST_CLIENT", "tools/mdcast-client")}


def rss_and_fds(pid):
    """(RSS in MiB, open descriptors) of a live process, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss_kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        return rss_kb / 1024.0, len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, StopIteration, ValueError):
        return None


def queue_gauges(port):
    """{metric: value} of the /metrics lines whose names speak of queues, or None."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=0.5) as reply:
            text = reply.read().decode()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        if any(word in name for word in QUEUE_WORDS):
            try:
                out[name] = float(value)
            except ValueError:
                pass
    return out


class Daemon:
    """A daemon the runner may kill and restart: every life is sampled apart."""

    def __init__(self, name, argv, port, admin_port, log_dir, commands, core=None):
        self.name, self.argv, self.port, self.admin_port = name, argv, port, admin_port
        self.core = core  # pinned here (with the busy neighbour) in every life
        self.log_dir, self.commands = log_dir, commands
        self.lives = []  # [{"start": t, "samples": [(t, rss, fds)], "queues": {...}}]
        self.stopped_until = 0.0
        self.process = None
        self.restarts = 0
        self.start()

    def start(self):
        suffix = f"-{self.restarts}" if self.restarts else ""
        self.process = Process(self.name + suffix, self.argv, self.log_dir, self.commands)
        if self.core is not None:
            os.sched_setaffinity(self.process.pid, {self.core})
        wait_for_port(self.port, self.process, timeout=20)
        self.lives.append({"start": time.monotonic(), "samples": [], "queues_first": None,
                           "queues_last": None})

    def kill_and_restart(self):
        self.process.popen.send_signal(signal.SIGKILL)
        self.process.popen.wait(timeout=10)
        self.process.stop()
        time.sleep(0.5)
        self.restarts += 1
        self.start()

    def sample(self, now):
        if now < self.stopped_until or not self.process.running():
            return
        usage = rss_and_fds(self.process.pid)
        if usage:
            self.lives[-1]["samples"].append((now, usage[0], usage[1]))
        queues = queue_gauges(self.admin_port)
        if queues is not None:
            life = self.lives[-1]
            life["queues_last"] = queues
            if life["queues_first"] is None:
                life["queues_first"] = queues


class Watcher:
    """A long-lived mdcast-client on one server, followed item by item from its JSON lines."""

    def __init__(self, stack, server, items):
        self.stack, self.server, self.items = stack, server, items
        self.process = None
        self.offset = 0
        self.incarnation = 0
        self.connect()

    def connect(self):
        self.incarnation += 1
        self.process = self.stack.start(
            f"watch-{self.server.name}-{self.incarnation}",
            [self.stack.bin["client"], "--server", f"127.0.0.1:{self.server.port}", "--items",
             ",".join(self.items), "--output", "json", "--duration", "100000"])
        self.offset = 0
        self.closed = False
        # item -> {"seq", "state": "ok"/"suspect"/"closed"/"waiting", "last": time}
        self.state = {item: {"seq": None, "state": "waiting", "last": time.monotonic()} for item in self.items}

    def poll(self, now, findings):
        with open(self.process.out_path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        complete = data.rfind(b"\n") + 1
        self.offset += complete
        for line in data[:complete].decode(errors="replace").splitlines():
            if line.startswith("{"):
                self.on_event(json.loads(line), now, findings)
        if not self.process.running() or self.closed:
            if self.server.process.running() and now >= self.server.stopped_until:
                self.process.stop()
                self.connect()

    def on_event(self, event, now, findings):
        kind = event.get("type")
        if kind == "closed":
            self.closed = True
            return
        item = event.get("item")
        if item not in self.state:
            return
        entry = self.state[item]
        if kind == "refresh":
            entry.update(seq=event["seq"], state="ok" if event.get("data") == "ok" else "suspect",
                         last=now)
            self.stack.counts["refreshes"] += 1
        elif kind == "update":
            self.stack.counts["updates"] += 1
            if entry["seq"] is not None and not event.get("conflated"):
                if event["seq"] <= entry["seq"]:
                    findings.append(f"duplicate: {item} seq {event['seq']} after {entry['seq']} "
                                    f"({self.process.name})")
                elif event["seq"] != entry["seq"] + 1:
                    findings.append(f"gap: {item} seq {entry['seq']} -> {event['seq']} ({self.process.name})")
            entry.update(seq=event["seq"], last=now)
        elif kind == "status":
            self.stack.counts["statuses"] += 1
            entry["state"] = {"ok": "ok", "suspect": "suspect"}.get(event.get("data"), "closed")
            if event.get("stream") == "closed":
                # The source publishes every item throughout: a closed stream is service lost.
                entry["state"] = "closed"
                findings.append(f"closed: {item} {event.get('code')} \"{event.get('text')}\" "
                                f"({self.process.name})")
            entry["last"] = now

    def check_stale(self, now, stale_s, findings):
        """Items current for the client, silent for stale_s, on a server that ran throughout."""
        if self.closed or not self.process.running():
            return
        server_life = self.server.lives[-1]["start"]
        if now - max(server_life, self.server.stopped_until) < stale_s:
            return
        for item, entry in self.state.items():
            if entry.get("reported"):
                continue
            if entry["state"] == "ok" and now - entry["last"] > stale_s:
                entry["reported"] = True
                findings.append(f"silent stale: {item} shown current but not updated for "
                                f"{now - entry['last']:.1f} s ({self.process.name})")
            elif entry["state"] == "waiting" and now - entry["last"] > 2 * stale_s:
                entry["reported"] = True
                findings.append(f"silent stale: {item} subscribed {now - entry['last']:.1f} s ago, "
                                f"neither an image nor a status yet ({self.process.name})")


class SoakStack:
    def __init__(self, args):
        self.args = args
        self.bin = binaries(args.build)
        self.etc = os.environ.get("MDCAST_ETC") or os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "..", "etc")
        self.log_dir = args.out
        os.makedirs(self.log_dir, exist_ok=True)
        self.processes, self.commands = [], []
        self.counts = {"updates": 0, "refreshes": 0, "statuses": 0, "churn_clients": 0,
                       "churn_updates": 0, "churn_gaps": 0, "churn_duplicates": 0, "churn_closed": 0}
        self.group = f"239.255.{random.randint(1, 254)}.{random.randint(1, 254)}"
        self.backbone_port = free_port(socket.SOCK_DGRAM)
        self.publisher_port = free_port()

    def start(self, name, argv):
        p = Process(name, argv, self.log_dir, self.commands)
        self.processes.append(p)
        return p

    def config(self, name, file_name, overrides, loss):
        """The latency profile with `overrides` and a testing.loss section ({key: value})."""
        with open(os.path.join(self.etc, "profiles", "latency", name + ".yaml")) as f:
            text = merge_config(f.read(), overrides)
        text += "testing:\n  loss:\n" + "".join(f"    {k}: {v}\n" for k, v in loss.items())
        path = os.path.join(self.log_dir, file_name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def start_daemons(self):
        a = self.args
        backbone = {"backbone.group": self.group, "backbone.port": self.backbone_port,
                    "backbone.interface": "127.0.0.1"}
        admin = free_port()
        cfg = self.config("distributor", "distributor.yaml", {
            **backbone, "backbone.ttl": 0, "publishers.port": self.publisher_port, "admin.port": admin},
            {"send_rate": a.loss, "control_receive_rate": a.loss, "seed": a.seed})
        core = a.busy_neighbour if a.busy_neighbour >= 0 else None
        self.daemons = [Daemon("distributor", [self.bin["distributor"], "--config", cfg],
                               self.publisher_port, admin, self.log_dir, self.commands, core)]
        for n in range(1, a.servers + 1):
            port, admin = free_port(), free_port()
            cfg = self.config("server", f"server{n}.yaml", {
                **backbone, "clients.port": port, "admin.port": admin},
                {"control_send_rate": a.loss, "seed": a.seed + n})
            self.daemons.append(Daemon(f"server{n}", [self.bin["server"], "--config", cfg],
                                       port, admin, self.log_dir, self.commands, core))
        self.servers = self.daemons[1:]

    def start_source(self):
        a = self.args
        self.source = self.start(f"source-{len(self.processes)}", [
            self.bin["source"], "--distributor", f"127.0.0.1:{self.publisher_port}", "--items", str(a.items),
            "--rate", str(a.rate), "--duration", str(int(a.duration) + 60)])

    def wait_until_serving(self, timeout=30.0):
        """Every server answers an image of the source's first item: the stack is up, so the
        watchers' subscriptions meet a known service (a service no distributor has listed yet
        is closed "no such service", as it should be, and is not what the soak tests)."""
        deadline = time.monotonic() + timeout
        for server in self.servers:
            while True:
                probe = subprocess.run(
                    [self.bin["client"], "--server", f"127.0.0.1:{server.port}", "--items", "ITEM000000",
                     "--snapshot", "--output", "json", "--duration", "1"],
                    capture_output=True, text=True, timeout=10)
                if '"type":"refresh"' in probe.stdout:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{server.name} serves no image of ITEM000000 within {timeout} s")
                time.sleep(0.2)

    def item_names(self, count, rng):
        return [f"ITEM{i:06d}" for i in sorted(rng.sample(range(self.args.items), count))]

    def stop(self):
        for d in getattr(self, "daemons", []):
            if d.process.running():
                d.process.popen.send_signal(signal.SIGCONT)
        for p in reversed(self.processes):
            p.stop()
        for d in getattr(self, "daemons", []):
            d.process.stop()


class Churn:
    """Short-lived clients on random servers with random items."""

    def __init__(self, stack, rng):
        self.stack, self.rng = stack, rng
        self.live = []  # (process, server, started)

    def tick(self, now, findings):
        for entry in list(self.live):
            process, server, started = entry
            if process.running():
                continue
            self.live.remove(entry)
            self.collect(process, server, started, findings)
        while len(self.live) < self.stack.args.churn_clients:
            server = self.rng.choice(self.stack.servers)
            items = self.stack.item_names(self.rng.randint(1, min(50, self.stack.args.items)), self.rng)
            seconds = self.rng.uniform(1.0, 5.0)
            name = f"churn-{self.stack.counts['churn_clients']}"
            self.stack.counts["churn_clients"] += 1
            process = self.stack.start(name, [
                self.stack.bin["client"], "--server", f"127.0.0.1:{server.port}", "--items", ",".join(items),
                "--output", "none", "--duration", f"{seconds:.2f}"])
            self.live.append((process, server, now))

    def collect(self, process, server, started, findings):
        summary = process.json_line("summary")
        process.stop()
        faulted = len(server.lives) > 1 and server.lives[-1]["start"] > started or server.stopped_until > started
        if summary is None:
            if not faulted:
                findings.append(f"{process.name} ended without a summary:\n{process.log_text()[-1000:]}")
            return
        c = self.stack.counts
        c["churn_updates"] += summary.get("updates", 0)
        c["churn_gaps"] += summary.get("gaps", 0)
        c["churn_duplicates"] += summary.get("duplicates", 0)
        c["churn_closed"] += summary.get("closed", 0)
        if summary.get("gaps", 0) or summary.get("duplicates", 0):
            findings.append(f"{process.name}: {summary.get('gaps')} gaps, {summary.get('duplicates')} duplicates")

    def finish(self, findings):
        for process, server, started in self.live:
            process.terminate()
            self.collect(process, server, started, findings)


def fault_schedule(daemons, duration, rng, warmup, settle):
    """[(time, kind, daemon)]: a kill and a stop per daemon, shuffled, evenly spaced."""
    faults = [(kind, d) for d in daemons for kind in ("kill", "stop")]
    rng.shuffle(faults)
    span = max(duration - warmup - settle, 1.0)
    step = span / len(faults)
    return [(warmup + step * (i + 0.5), kind, d) for i, (kind, d) in enumerate(faults)]


def growth_findings(daemon, args):
    out = []
    for n, life in enumerate(daemon.lives):
        samples = [s for s in life["samples"] if s[0] - life["start"] >= args.life_warmup_seconds]
        if len(samples) < 2 or samples[-1][0] - samples[0][0] < args.growth_life_seconds:
            continue
        (_, rss0, fds0), (_, rss1, fds1) = samples[0], samples[-1]
        if rss1 > rss0 * (1 + args.rss_growth) + args.rss_slack_mb:
            out.append(f"{daemon.name} life {n}: RSS grew {rss0:.1f} -> {rss1:.1f} MiB")
        if fds1 > fds0 + args.fd_slack:
            out.append(f"{daemon.name} life {n}: descriptors grew {fds0} -> {fds1}")
    return out


def daemon_figures(daemon):
    samples = [s for life in daemon.lives for s in life["samples"]]
    first, last = (samples[0], samples[-1]) if samples else ((0, 0, 0), (0, 0, 0))
    return {"restarts": daemon.restarts, "rss_mb_start": round(first[1], 1), "rss_mb_end": round(last[1], 1),
            "rss_mb_max": round(max((s[1] for s in samples), default=0), 1), "fds_start": first[2],
            "fds_end": last[2], "queues_start": daemon.lives[0]["queues_first"],
            "queues_end": daemon.lives[-1]["queues_last"]}


def busy_neighbour(core):
    """A process spinning on `core` beside the daemons pinned there, as a busy
    neighbour on a shared host would; ended by its PID when the run ends."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    os.sched_setaffinity(spinner.pid, {core})
    return spinner


def run(args):
    rng = random.Random(args.seed)
    stack = SoakStack(args)
    findings, faults_done = [], []
    neighbour = busy_neighbour(args.busy_neighbour) if args.busy_neighbour >= 0 else None
    try:
        stack.start_daemons()
        stack.start_source()
        stack.wait_until_serving()
        watchers = [Watcher(stack, server, stack.item_names(min(args.watch_items, args.items), rng))
                    for server in stack.servers]
        churn = Churn(stack, rng)
        start = time.monotonic()
        schedule = fault_schedule(stack.daemons, args.duration, rng, args.warmup_seconds, args.settle_seconds)
        pending_cont = []  # (time, daemon)
        next_sample = start
        while True:
            now = time.monotonic()
            elapsed = now - start
            if elapsed >= args.duration:
                break
            while schedule and schedule[0][0] <= elapsed:
                _, kind, daemon = schedule.pop(0)
                faults_done.append({"at_s": round(elapsed, 1), "fault": kind, "daemon": daemon.name})
                print(f"[{elapsed:6.1f} s] {kind} {daemon.name}", flush=True)
                if kind == "kill":
                    daemon.kill_and_restart()
                else:
                    daemon.process.popen.send_signal(signal.SIGSTOP)
                    daemon.stopped_until = now + args.stop_seconds
                    pending_cont.append((now + args.stop_seconds, daemon))
            for entry in [e for e in pending_cont if e[0] <= now]:
                pending_cont.remove(entry)
                entry[1].process.popen.send_signal(signal.SIGCONT)
            for daemon in stack.daemons:
                if not daemon.process.running():
                    findings.append(f"{daemon.name} exited by itself:\n{daemon.process.log_text()[-2000:]}")
                    daemon.restarts += 1
                    daemon.start()
            if not stack.source.running():
                stack.start_source()
            for w in watchers:
                w.poll(now, findings)
                if elapsed > args.warmup_seconds:
                    w.check_stale(now, args.stale_seconds, findings)
            churn.tick(now, findings)
            if now >= next_sample:
                for daemon in stack.daemons:
                    daemon.sample(now)
                next_sample += args.sample_interval
            time.sleep(0.05)
        for entry in pending_cont:
            entry[1].process.popen.send_signal(signal.SIGCONT)
        churn.finish(findings)
        now = time.monotonic()
        for w in watchers:
            w.poll(now, findings)
            for item, entry in w.state.items():
                if entry["state"] != "ok" or now - entry["last"] > args.stale_seconds:
                    findings.append(f"{item} not current at the end on {w.server.name}: {entry['state']}, "
                                    f"last heard {now - entry['last']:.1f} s ago")
        for daemon in stack.daemons:
            findings.extend(growth_findings(daemon, args))
    finally:
        stack.stop()
        if neighbour:
            neighbour.kill()
            neighbour.wait()
    c = stack.counts
    report = {"duration_s": args.duration, "items": args.items, "rate": args.rate, "loss": args.loss,
              "updates": c["updates"] + c["churn_updates"], "watched_updates": c["updates"],
              "churn_updates": c["churn_updates"], "churn_clients": c["churn_clients"],
              "refreshes": c["refreshes"], "statuses": c["statuses"],
              "gaps": c["churn_gaps"] + sum(f.startswith("gap") for f in findings),
              "duplicates": c["churn_duplicates"] + sum(f.startswith("duplicate") for f in findings),
              "silent_stale": sum(f.startswith("silent stale") for f in findings),
              "faults": faults_done, "daemons": {d.name: daemon_figures(d) for d in stack.daemons},
              "busy_neighbour_core": args.busy_neighbour if neighbour else None,
              "load_average": os.getloadavg(), "findings": findings, "commands": stack.commands}
    with open(os.path.join(args.out, "soak.json"), "w") as f:
        json.dump(report, f, indent=1)
    print(f"updates {report['updates']} (watched {c['updates']}, churn {c['churn_updates']} over "
          f"{c['churn_clients']} clients), refreshes {c['refreshes']}, statuses {c['statuses']}, "
          f"gaps {report['gaps']}, duplicates {report['duplicates']}, silent stale {report['silent_stale']}")
    for name, d in report["daemons"].items():
        print(f"{name:12} restarts {d['restarts']}  RSS {d['rss_mb_start']} -> {d['rss_mb_end']} MiB "
              f"(max {d['rss_mb_max']})  fds {d['fds_start']} -> {d['fds_end']}")
    for finding in findings:
        print("FAIL:", finding)
    print("soak:", "FAILED" if findings else "passed", f"(report {os.path.join(args.out, 'soak.json')})")
    return 1 if findings else 0


def interrupted(signum, _frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build", help="build directory holding the binaries")
    p.add_argument("--duration", type=float, default=60, help="seconds to run (bounded)")
    p.add_argument("--out", default=None, help="directory for logs and soak.json")
    p.add_argument("--servers", type=int, default=2)
    p.add_argument("--items", type=int, default=200)
    p.add_argument("--rate", type=int, default=2000, help="updates per second from the source")
    p.add_argument("--loss", type=float, default=0.01, help="backbone data and NAK loss injected")
    p.add_argument("--churn-clients", type=int, default=3, help="short-lived clients alive at once")
    p.add_argument("--watch-items", type=int, default=20, help="items each watcher follows")
    p.add_argument("--stop-seconds", type=float, default=4.0, help="how long a SIGSTOP lasts")
    p.add_argument("--stale-seconds", type=float, default=6.0,
                   help="an item shown current with no update this long is a silent stale item")
    p.add_argument("--warmup-seconds", type=float, default=5.0)
    p.add_argument("--settle-seconds", type=float, default=15.0, help="no faults in the last seconds")
    p.add_argument("--sample-interval", type=float, default=1.0)
    p.add_argument("--life-warmup-seconds", type=float, default=10.0,
                   help="growth is measured from this long after each (re)start")
    p.add_argument("--growth-life-seconds", type=float, default=20.0,
                   help="only lives at least this long are checked for growth")
    p.add_argument("--rss-growth", type=float, default=0.5, help="allowed relative RSS growth")
    p.add_argument("--rss-slack-mb", type=float, default=16.0, help="plus this much")
    p.add_argument("--fd-slack", type=int, default=16, help="allowed descriptor growth")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--busy-neighbour", type=int, default=-1, metavar="CORE",
                   help="pin the daemons to CORE beside a process spinning there (-1: off)")
    args = p.parse_args()
    if args.out is None:
        args.out = os.path.join("reports", "soak-" + time.strftime("%Y%m%d-%H%M%S"))
    # SIGTERM (CTest's timeout, an operator) unwinds like Ctrl-C, so the stack's
    # daemons and clients are stopped instead of left running.
    signal.signal(signal.SIGTERM, interrupted)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
