"""Reliable backbone under injected loss: with 1 % and 10 % of data packets and
10 % of NAKs lost, every update still reaches every client exactly once and in
order, and no client ever sees a suspect status caused by the loss."""
import re
import signal
import time

from harness import Stack, check, run, wait_for_log
from streams import check_full_stream, messages, sent_updates

ITEMS = 20
NAMES = [f"ITEM{i:06d}" for i in range(ITEMS)]


def counter(log, name):
    values = re.findall(rf"\b{name}=(\d+)", log)
    check(values, f"no '{name}' counter in the log")
    return int(values[-1])


def run_with_loss(name, distributor_loss="", server_loss="", rate="4000"):
    with Stack(name) as stack:
        stack.distributor(extra=distributor_loss)
        servers = [stack.server(1, extra=server_loss), stack.server(2)]
        source = stack.source("--items", str(ITEMS), "--rate", rate, "--duration", "3")
        wait_for_log(source, "items registered")
        clients = [stack.client(n, "--items", ",".join(NAMES), "--duration", "60", name=f"client{n}")
                   for n in (1, 2)]
        check(source.wait(20) == 0, "source failed")
        total = sent_updates(source)
        # The clients run until every server has seen the service go down (after repairing
        # the tail), however slow a loaded machine is, then get a moment to read the status.
        for p in servers:
            wait_for_log(p, "service MDCAST (65537) is down", timeout=20)
        time.sleep(0.5)
        for client in clients:
            client.popen.send_signal(signal.SIGTERM)
            check(client.wait(20) == 0, f"{client.name} exit code")
        for p in servers:
            p.stop()  # the final counters line
        for client in clients:
            check_full_stream(messages(client), NAMES, total, ITEMS, only_final_status=True)
        return [p.log_text() for p in servers], stack.processes[0]


def test_one_percent_loss_on_send_is_repaired_for_every_server():
    logs, distributor = run_with_loss("loss1", distributor_loss="testing:\n  loss:\n    send_rate: 0.01\n    seed: 3")
    for log in logs:
        check(counter(log, "repaired") > 0, "no packet was repaired: was loss injected?")
        check(counter(log, "unrecoverable") == 0, "unrecoverable loss")
    distributor.stop()
    dlog = distributor.log_text()
    # Both servers lost the same packets; a repair is multicast once for both.
    check(counter(dlog, "repairs") <= counter(dlog, "injected_drops") * 1.2 + 2,
          f"more repairs than lost packets: {counter(dlog, 'repairs')} for {counter(dlog, 'injected_drops')}")


def test_ten_percent_data_and_nak_loss_is_repaired():
    loss = "testing:\n  loss:\n    receive_rate: 0.10\n    control_send_rate: 0.10\n    seed: 5"
    logs, _ = run_with_loss("loss10", server_loss=loss)
    lossy, clean = logs
    check(counter(lossy, "injected_drops") > 50, "too little loss injected to mean anything")
    check(counter(lossy, "repaired") > 0, "nothing repaired")
    check(counter(lossy, "unrecoverable") == 0, "unrecoverable loss")
    check(counter(clean, "naks") == 0, "the clean server NAKed")


def test_bursts_of_loss_are_repaired():
    loss = "testing:\n  loss:\n    receive_burst_every: 200\n    receive_burst_length: 20\n    seed: 9"
    logs, _ = run_with_loss("burst", server_loss=loss)
    check(counter(logs[0], "repaired") >= 20, "bursts were not repaired")
    check(counter(logs[0], "unrecoverable") == 0, "unrecoverable loss")


if __name__ == "__main__":
    run([test_one_percent_loss_on_send_is_repaired_for_every_server,
         test_ten_percent_data_and_nak_loss_is_repaired, test_bursts_of_loss_are_repaired])
