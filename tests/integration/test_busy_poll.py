"""The opt-in spinning mode for dedicated cores: distributor.busy_poll_us, the server's
backbone.busy_poll_us and the SDK's ConsumerOptions::busy_poll_us (mdcast-bench-consumer
--busy-poll-us). With it on, data flows as without it; the loops count the passes they
made without sleeping; while traffic flows the spinners block far less often than twins that
sleep, running at the same time on the same machine (so load affects both), and nothing is
spent once traffic stops."""
import json
import os
import re
import time

from harness import BIN, Stack, admin_port, check, metric, run, wait_for_log

SPIN_US = 3000
TICKS_PER_S = 100  # /proc/<pid>/stat times are in clock ticks (USER_HZ)


def cpu_s(process):
    with open(f"/proc/{process.popen.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_S


def sleeps(process):
    """Times the process's threads blocked (voluntary context switches, all threads): a loop
    that sleeps in epoll blocks once per wake-up; a spinning one does not while traffic flows
    (a yield between its empty passes leaves it runnable, an involuntary switch)."""
    total = 0
    for task in os.listdir(f"/proc/{process.popen.pid}/task"):
        with open(f"/proc/{process.popen.pid}/task/{task}/status") as f:
            total += int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", f.read(), re.M).group(1))
    return total


def summary(process):
    for line in process.log_text().splitlines():
        if '"type":"summary"' in line:
            return json.loads(line[line.index("{"):])
    raise AssertionError(f"{process.name} printed no summary:\n{process.log_text()[-2000:]}")


def consumer(stack, instance, name, *extra):
    return stack.start(name, [BIN["bench-consumer"], "--server", f"127.0.0.1:{stack.client_ports[instance]}",
                              "--item-count", "20", "--duration", "6", "--warmup", "0.5", *extra])


def test_spinning_daemons_and_consumer_deliver_and_spend_cpu_only_while_traffic_flows():
    with Stack("busy-poll") as stack:
        admin = "admin:\n  port: 0\n"
        distributor = stack.distributor(extra=f"{admin}distributor:\n  busy_poll_us: {SPIN_US}\n")
        sleeper = stack.server(1, extra=admin)
        spinner = stack.server(2, extra=f"  busy_poll_us: {SPIN_US}\n{admin}")
        ports = {p: admin_port(p) for p in (distributor, sleeper, spinner)}
        source = stack.source("--items", "20", "--rate", "400", "--duration", "5")
        wait_for_log(source, "items registered", 30)
        quiet = consumer(stack, 1, "consumer-sleeps")
        busy = consumer(stack, 2, "consumer-spins", "--busy-poll-us", str(SPIN_US))
        time.sleep(1.5)  # subscribed, images in, updates flowing
        processes = [sleeper, spinner, quiet, busy]
        before = [sleeps(p) for p in processes]
        time.sleep(2)
        during = [after - b for after, b in zip([sleeps(p) for p in processes], before)]
        for p in (quiet, busy):
            p.wait(30)
        for name, s in (("sleeping", summary(quiet)), ("spinning", summary(busy))):
            check(s["steady_updates"] > 0 and s["gaps"] == 0 and s["duplicates"] == 0,
                  f"{name} consumer: {s}")
        source.wait(30)
        check(metric(ports[sleeper], "mdcast_server_busy_poll_passes_total") == 0, "a server spun with it off")
        check(metric(ports[spinner], "mdcast_server_busy_poll_passes_total") > 0, "the server never spun")
        check(metric(ports[distributor], "mdcast_distributor_busy_poll_passes_total") > 0,
              "the distributor never spun")
        print(f"blocked during 2 s: servers sleeping {during[0]}, spinning {during[1]}; consumers sleeping "
              f"{during[2]}, spinning {during[3]}")
        # While traffic flows the spinners hardly block; their sleeping twins block per wake-up.
        # (Not their CPU: a spinner yields its core to whatever else is ready, so on a loaded
        # machine it may get less CPU than its sleeping twin.)
        check(during[1] * 1.5 < during[0], f"server blocked {during[1]} times spinning, {during[0]} sleeping")
        check(during[3] * 1.5 < during[2], f"consumer blocked {during[3]} times spinning, {during[2]} sleeping")
        # Traffic over: the spin ends within its bound and the loops sleep again.
        time.sleep(0.5)
        passes = [metric(ports[p], f"mdcast_{kind}_busy_poll_passes_total")
                  for p, kind in ((spinner, "server"), (distributor, "distributor"))]
        idle_before = cpu_s(spinner)
        time.sleep(1)
        check(cpu_s(spinner) - idle_before <= 0.1, "the spinning server spent CPU while idle")
        check([metric(ports[p], f"mdcast_{kind}_busy_poll_passes_total")
               for p, kind in ((spinner, "server"), (distributor, "distributor"))] == passes,
              "the loops still spin with no traffic")


if __name__ == "__main__":
    run([test_spinning_daemons_and_consumer_deliver_and_spend_cpu_only_while_traffic_flows])
