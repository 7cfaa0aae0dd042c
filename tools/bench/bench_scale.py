"""mdcast-bench scale: the scale envelope (docs/benchmarks.md, "Scale envelope").

Each dimension is its own step on its own private stack (throughput profile, a limit set at the
target so the target is the edge), bounded in time, and most steps then go a few past the limit
(--scale-beyond) to see that the excess is refused loudly. A row's verdict:
  holds            the target was reached;
  refused loudly   it was not, and a warning or error line, a refused answer or a closed
                   status says why (the evidence is in the row);
  FAILED SILENTLY  it stopped short, and nothing said so: a bug;
  NOT REACHED in the time bound  still growing, nothing said, when --scale-timeout ran out;
  counted only     short, and only a daemon's counter says so: no log line, no client status.
A rate (images/s) holds or is below target; a `past` row is refused loudly, FAILED SILENTLY,
NOT ENFORCED (more than the limit was let in), or "limit not reached" (its target row fell
short, so nothing past the limit was asked)."""
import csv
import json
import os
import resource
import subprocess
import sys
import time

from bench_stack import Stack
from scale_probe import Poll, admin_port, loud_lines, metric, rss_mb

HERE = os.path.dirname(os.path.abspath(__file__))
# Items per subscribe request: the server's frames are at most 64 KiB, and 4,000 names of
# "ITEM000000" fit one with room to spare (the SDK does not split a larger batch yet).
ITEMS_PER_REQUEST = 4000


def add_arguments(parser):
    scale = parser.add_argument_group("scale scenario")
    scale.add_argument("--scale-steps", default="items,services,subscriptions,connections",
                       help="steps to run (default: all four; subscriptions also measures images/s "
                            "and the recovery after a distributor restart)")
    scale.add_argument("--scale-items", type=int, default=1_000_000, help="items cached by one server")
    scale.add_argument("--scale-items-batch", type=int, default=50_000,
                       help="items step: items per source process, published one after another")
    scale.add_argument("--scale-services", type=int, default=1000, help="services of one distributor")
    scale.add_argument("--scale-service-items", type=int, default=100_000,
                       help="items of one service, all subscribed on one connection")
    scale.add_argument("--scale-connections", type=int, default=10_000, help="client connections to one server")
    scale.add_argument("--scale-client-processes", type=int, default=4,
                       help="mdcast-client processes sharing --scale-connections")
    scale.add_argument("--scale-beyond", type=int, default=10,
                       help="how many past each limit a step then asks for (0: no over-limit rows)")
    scale.add_argument("--scale-timeout", type=float, default=120, help="time bound of each step, seconds")


class Row:
    def __init__(self, dimension, target, reached, unit, seconds, outcome, evidence, extra=""):
        self.dimension, self.target, self.reached, self.unit = dimension, target, reached, unit
        self.seconds, self.outcome, self.evidence, self.extra = seconds, outcome, evidence, extra
        self.verdict = ("holds" if reached >= target else "refused loudly" if evidence
                        else "NOT REACHED in the time bound" if outcome.startswith("time bound")
                        else "FAILED SILENTLY")


class Rate(Row):
    """A rate under its target is a figure, not a failure."""

    def __init__(self, dimension, target, reached, seconds, extra):
        super().__init__(dimension, target, reached, "", seconds, "", [], extra)
        self.verdict = "holds" if reached >= target else "below target"


class Beyond(Row):
    """Asking for `asked` past a limit of `limit`: held at the limit and said so is the
    wanted outcome; going past it means the limit is not enforced."""

    def __init__(self, dimension, limit, asked, reached, evidence):
        super().__init__(dimension, limit, reached, "", 0.0, "", evidence)
        self.asked = asked
        self.verdict = ("NOT ENFORCED" if reached > limit else "limit not reached" if reached < limit
                        else "refused loudly" if evidence else "FAILED SILENTLY")


class Scale:
    def __init__(self, runner, args):
        self.runner, self.args = runner, args
        self.rows, self.commands = [], []
        raise_nofile()

    def stack(self, step, server=None, distributor=None):
        stack = Stack(self.runner.bin, os.path.join(self.runner.profiles, "throughput"),
                      os.path.join(self.runner.out, "logs", step), client="lean", source="lean")
        admin = {"admin.port": 0, "admin.address": "127.0.0.1"}
        try:
            stack.start_core(1, server_overrides={**admin, **(server or {})},
                             distributor_overrides={**admin, **(distributor or {})})
        except Exception:
            stack.stop()
            raise
        return stack

    def add(self, row):
        self.rows.append(row)
        extra = f", {row.extra}" if row.extra else ""
        print(f"  {row.dimension}: {row.reached:,} of {row.target:,}{extra} [{row.verdict}]", flush=True)

    def run(self, stack_step):
        """One step; its stack is stopped by PID whatever happens."""
        name = stack_step.__name__.removeprefix("step_")
        print(f"scale, {name}:", flush=True)
        try:
            stack_step()
        except Exception as error:  # a step that cannot run is a row of its own, not the end
            self.add(Row(name, 1, 0, "", 0.0, "did not run", [f"{type(error).__name__}: {error}"[:400]]))

    # ---- the steps ---------------------------------------------------------------------------

    def step_items(self):
        n, beyond = self.args.scale_items, self.args.scale_beyond
        with self.stack("items", server={"cache.max_items": n, "cache.hash_table_size": 2 * n + 1},
                        distributor={"registry.max_items": n + beyond}) as stack:
            server = stack.servers[0]
            port = admin_port(server)
            before = rss_mb(server.pid)
            poll = self.publish_in_batches(stack, port, n, beyond)
            time.sleep(1.0)  # the items past the limit arrive last: let them
            after = rss_mb(server.pid) or 0.0
            items = int(metric(port, "mdcast_server_items", poll.value))
            per_item = (after - before) * 1048576 / items if items else 0.0
            logged = [line for line in loud_lines(stack.processes, 100) if "cache.max_items" not in line][:3]
            self.add(Row("items cached by one server", n, min(items, n), "items", poll.seconds, poll.outcome, logged,
                         f"server RSS {before:.0f} → {after:.0f} MiB, {per_item:,.0f} bytes per item, "
                         f"distributor RSS {rss_mb(stack.distributor.pid) or 0:.0f} MiB"))
            self.commands += stack.commands
            if beyond:
                self.add(Beyond("items past cache.max_items", n, n + beyond, items,
                                [l for l in loud_lines([server]) if "max_items" in l]))

    def publish_in_batches(self, stack, port, n, beyond):
        """n (+ beyond) items from one source process per --scale-items-batch items, each its
        own service, started when the server has cached the previous ones: a million images in
        one burst overrun one server's backbone receive (unrecoverable loss, logged), which
        measures the burst rather than how many items a server holds."""
        batch, start, poll = max(1, self.args.scale_items_batch), time.monotonic(), None
        for k, first in enumerate(range(0, n, batch)):
            count = min(batch, n - first) + (beyond if first + batch >= n else 0)
            stack.start(f"source{k + 1}", [self.runner.bin["source"], "--distributor",
                                           f"127.0.0.1:{stack.publisher_port}", "--service", f"SCALE{k:03d}",
                                           "--items", str(count), "--rate", "0", "--no-stamp", "--duration", "0"])
            left = self.args.scale_timeout - (time.monotonic() - start)
            poll = Poll(lambda: metric(port, "mdcast_server_items"), min(n, first + batch), max(1.0, left))
            if poll.outcome != "reached":
                break
        poll.seconds = time.monotonic() - start if poll.outcome == "reached" else poll.seconds
        return poll

    def step_services(self):
        n, beyond = self.args.scale_services, self.args.scale_beyond
        with self.stack("services", distributor={"registry.max_services": n}) as stack:
            python = os.path.join(os.path.dirname(self.runner.bin["distributor"]), "../client-sdk/python")
            env = {**os.environ, "PYTHONPATH": os.path.abspath(python)}
            argv = [sys.executable, os.path.join(HERE, "scale_services.py"),
                    "--distributor", f"127.0.0.1:{stack.publisher_port}", "--server", stack.server_list(),
                    "--services", str(n + beyond), "--timeout", str(self.args.scale_timeout)]
            stack.commands.append(" ".join(argv))
            done = subprocess.run(argv, env=env, capture_output=True, text=True,
                                  timeout=self.args.scale_timeout + 30)
            result = json.loads((done.stdout.strip().splitlines() or ["{}"])[-1] or "{}")
            if not result:
                raise RuntimeError(f"scale_services.py: {done.stderr[-400:]}")
            # The services past the limit are refused on purpose: not evidence for the rows within it.
            past = {f"SCALE{s:05d}" for s in range(n, n + beyond)}
            within = [name for name in result["refused_names"] if name not in past]
            logged = [line for line in loud_lines(stack.processes, 100) if not any(p in line for p in past)][:3]
            accepted, listed = result["accepted"], result["directory"]
            self.add(Row("services accepted by one distributor", n, min(accepted, n), "services",
                         result["announce_s"], "", logged + [f"publisher: refused {len(within)}"] * bool(within)))
            row = Row("services in a server's directory", min(accepted, n), min(listed, n), "services",
                      result["directory_s"], "", logged, f"directory lists {listed:,} of the {accepted:,} accepted")
            oversize = metric(admin_port(stack.distributor), "mdcast_distributor_oversize_total")
            if row.verdict == "FAILED SILENTLY" and oversize:  # a directory too big for one datagram
                row.verdict = "counted only (a metric; no log, no status)"
                row.evidence = [f"distributor: mdcast_distributor_oversize_total {oversize:g}"]
            self.add(row)
            self.commands += stack.commands
            if beyond:
                self.add(Beyond("services past registry.max_services", n, n + beyond, accepted,
                                [f"publisher: refused: {t}" for t in result["refusals"]]))

    def step_subscriptions(self):
        n, beyond = self.args.scale_service_items, self.args.scale_beyond
        # A distributor restart sends each subscriber a status or two per item at once (about 14 MB
        # for 100,000 items): more than the throughput profile's 11 MB output.max_bytes, which
        # would close the client as a slow consumer before the fresh images. Room for 64 MiB.
        room = {"output.expected_clients": 4, "output.max_bytes": 64 << 20}
        with self.stack("subscriptions", server={"clients.max_subscriptions": n, "cache.hash_table_size": 2 * n + 1,
                                                 "clients.max_items_per_request": ITEMS_PER_REQUEST, **room}) as stack:
            port = admin_port(stack.servers[0])
            stack.source_kind = "sdk"  # the libmdcast Publisher: it logs in again after the restart
            stack.source("--service", "SCALE", "--items", n, "--rate", 0, "--duration", 1e6)
            poll = Poll(lambda: metric(port, "mdcast_server_items"), n, self.args.scale_timeout)
            self.add(Row("items in one service", n, int(poll.value), "items", poll.seconds, poll.outcome,
                         loud_lines(stack.processes)))
            self.subscribe(stack, port, n, beyond)
            self.recovery(stack, n)
            self.commands += stack.commands

    def subscribe(self, stack, port, n, beyond):
        """One connection subscribes n (+ beyond) items: how many hold, and how fast the images come."""
        csv_path = os.path.join(stack.log_dir, "client.csv")
        client = stack.client("client", "--service", "SCALE", "--item-count", n + beyond, "--output", "none",
                              "--stats-interval", 0.2, "--csv", csv_path)
        subs = Poll(lambda: client_refreshes(csv_path), n, self.args.scale_timeout)
        subscribed = int(metric(port, "mdcast_server_subscriptions"))
        client.terminate()
        summary = client.json_line("summary") or {}
        self.add(Row("subscriptions on one connection", n, min(subscribed, subs.value), "subscriptions",
                     subs.seconds, subs.outcome, loud_lines(stack.processes)))
        self.add(Rate("images/s at subscribe (one connection)", 100_000, int(summary.get("images_per_s", 0)),
                      summary.get("image_time_s", 0.0),
                      f"{summary.get('refreshes', 0):,} images in {summary.get('image_time_s', 0):.2f} s"))
        if beyond:
            refused = summary.get("statuses", 0)  # the closed answers past the limit
            self.add(Beyond("subscriptions past clients.max_subscriptions", n, n + beyond, subscribed,
                            [f"client: {refused} item statuses (closed, limit reached)"] if refused else []))

    def recovery(self, stack, n):
        """A client holds n items; the distributor restarts (a new epoch): how long until the
        client has n fresh images."""
        csv_path = os.path.join(stack.log_dir, "watcher.csv")
        stack.client("watcher", "--service", "SCALE", "--item-count", n, "--output", "none",
                     "--stats-interval", 0.2, "--csv", csv_path)
        Poll(lambda: client_refreshes(csv_path), n, self.args.scale_timeout)
        before = client_refreshes(csv_path)
        distributor = stack.distributor
        distributor.stop()
        stack.processes.remove(distributor)
        started = time.monotonic()
        stack.distributor = stack.start("distributor2", distributor.argv, "daemon")
        poll = Poll(lambda: client_refreshes(csv_path) - before, n, self.args.scale_timeout)
        self.add(Row("items recovered after a distributor restart", n, int(poll.value), "items",
                     poll.seconds, poll.outcome, loud_lines(stack.processes),
                     f"{time.monotonic() - started:.1f} s from the restart to the last fresh image"))

    def step_connections(self):
        n, beyond = self.args.scale_connections, self.args.scale_beyond
        procs = max(1, self.args.scale_client_processes)
        with self.stack("connections", server={"clients.max_connections": n}) as stack:
            port = admin_port(stack.servers[0])
            stack.source("--service", "SCALE", "--items", 1, "--rate", 0, "--no-stamp", "--duration", 0)
            Poll(lambda: metric(port, "mdcast_server_items"), 1, 10)
            shares = [n // procs + (1 if i < n % procs else 0) for i in range(procs)]
            for i, share in enumerate(s for s in shares if s):
                stack.client(f"client{i + 1}", "--service", "SCALE", "--item-count", 1, "--connections", share,
                             "--output", "none")
            poll = Poll(lambda: metric(port, "mdcast_server_clients"), n, self.args.scale_timeout)
            subscribed = Poll(lambda: metric(port, "mdcast_server_subscriptions"), n, 15)
            self.add(Row("client connections to one server", n, int(poll.value), "connections", poll.seconds,
                         poll.outcome, loud_lines(stack.servers + stack.processes[-procs:]),
                         f"{procs} client processes, {int(subscribed.value):,} subscriptions"))
            if beyond:
                extra = stack.client("client-beyond", "--service", "SCALE", "--item-count", 1,
                                     "--connections", beyond, "--output", "none")
                time.sleep(3.0)
                open_now = int(metric(port, "mdcast_server_clients"))
                self.add(Beyond("connections past clients.max_connections", n, n + beyond, open_now,
                                [l for l in loud_lines([stack.servers[0], extra]) if "connection" in l]))
            self.commands += stack.commands


def client_column(csv_path, column):
    """A count of mdcast-client's last stats row (0 before the first): 3 refreshes, 4 statuses."""
    try:
        with open(csv_path) as f:
            rows = f.read().splitlines()
    except OSError:
        return 0
    return int(rows[-1].split(",")[column]) if len(rows) > 1 and rows[-1].count(",") > column else 0


def client_refreshes(csv_path):
    return client_column(csv_path, 3)


def raise_nofile():
    """Children inherit the limit: the servers and clients of 10,000 connections need it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def run(runner, args):
    scale = Scale(runner, args)
    steps = {"items": scale.step_items, "services": scale.step_services,
             "subscriptions": scale.step_subscriptions, "connections": scale.step_connections}
    for name in args.scale_steps.split(","):
        if name not in steps:
            sys.exit(f"mdcast-bench: --scale-steps: unknown step {name} ({', '.join(steps)})")
    for name in args.scale_steps.split(","):
        scale.run(steps[name])
    return scale


COLUMNS = ["dimension", "target", "reached", "seconds", "verdict", "figure", "evidence"]


def write(scale, out, header_lines):
    """scale.csv, commands.txt and report.md with the scale table."""
    with open(os.path.join(out, "scale.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for r in scale.rows:
            w.writerow([r.dimension, r.target, r.reached, f"{r.seconds:.3f}", r.verdict,
                        " ".join(x for x in (r.outcome, r.extra) if x), " | ".join(r.evidence)])
    with open(os.path.join(out, "commands.txt"), "w") as f:
        f.write("\n".join(scale.commands) + "\n")
    lines = header_lines + ["## Scale envelope", "",
                            "Each step is a fresh stack (throughput profile) with its limit set at the target. "
                            "`past` rows then ask for more than the limit: the excess must be refused loudly.", "",
                            "| dimension | target | reached | seconds | verdict | figure | evidence |",
                            "|---|---:|---:|---:|---|---|---|"]
    for r in scale.rows:
        target = f"{r.target:,}" if not isinstance(r, Beyond) else f"limit {r.target:,}, asked {r.asked:,}"
        figure = "; ".join(x for x in (r.outcome if r.outcome != "reached" else "", r.extra) if x)
        shown = r.evidence[:3] if r.verdict != "holds" else []  # a held row's warnings are in scale.csv
        evidence = "<br>".join(e.replace("|", "\\|") for e in shown)
        lines.append(f"| {r.dimension} | {target} | {r.reached:,} | {r.seconds:.2f} | **{r.verdict}** "
                     f"| {figure} | {evidence} |")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"\nreport: {os.path.join(out, 'report.md')}")
    for r in scale.rows:
        print(f"{r.dimension:<48} {r.reached:>12,} / {r.target:<10,} {r.verdict}")
    return 0
