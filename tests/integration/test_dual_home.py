"""One feed handler, two distributors (docs/sdk.md, "Publishing to two distributors";
docs/operations.md, "Redundancy"): one SDK Publisher publishes every item to
distributors 1 and 2 at once (PublisherOptions::publish_to_all), so the server has
both in the service's redundancy group with the same images and sequences. kill -9
of the active distributor: the server moves every item to distributor 2 with no
suspect status and no gap while the publisher goes on there; the distributor
restarted on its port: the publisher reconnects and re-images it, it is a standby
again, and after the hold-down it is active again (it ranks first). The same with
SIGSTOP and SIGCONT of the active distributor.

Two well-behaved clients watch every item: mdcast-client (every field of every
message checked against what the publisher publishes at its sequence) and the
SDK's Consumer (its sequencer: nothing dropped as a duplicate, updates in
sequence after each refresh)."""
import signal
from decimal import Decimal

from harness import (Stack, check, free_port, json_events, run, sdk_consumer, sdk_publisher, wait_for_events,
                     wait_for_log)
from streams import messages
from test_redundancy import HOLD_DOWN_MS, NAMES, SILENT_MS, Pair, check_raw_stream, check_sdk_stream, switch_lines
from test_several_backbones import add_distributor


def probe_fields(index, seq):
    """What sdk-publisher-probe publishes for item `index` at sequence `seq`."""
    return {"BID": Decimal(10000 + 100 * index + seq).scaleb(-2), "ACVOL_1": seq}


def start_distributor(stack, distributor_id, publisher_port, name):
    add_distributor(stack, name, distributor_id, stack.group, stack.backbone_port, publisher_port=publisher_port)


def link_events(publisher, port, state=None, host="127.0.0.1"):
    """The publisher's connection events (of `state`) for the distributor on `host`:`port`."""
    return [e for e in json_events(publisher) if e.get("event") == "connection" and
            e["server"] == f"{host}:{port}" and state in (None, e["state"])]


def downs_since_up(publisher, port, host="127.0.0.1"):
    """The link's down events after its first up (before it, attempts failed)."""
    states = [e["state"] for e in link_events(publisher, port, host=host)]
    return states[states.index("up"):].count("down") if "up" in states else None


class DualHomed(Pair):
    """Distributors 1 and 2, one dual-homed publisher feeding both, one server,
    an mdcast-client and an SDK consumer on every item (the checks of Pair)."""

    def __init__(self, stack):  # noqa: super().__init__ starts a source per distributor
        self.stack = stack
        self.ports = {1: free_port(), 2: free_port()}
        start_distributor(stack, 1, self.ports[1], "dist1")
        self.server = stack.server(1, extra=f"  source_silent_ms: {SILENT_MS}\n"
                                            f"redundancy:\n  hold_down_ms: {HOLD_DOWN_MS}\n"
                                            "  switch_slice_items: 3\n  switch_slice_us: 0\n")
        # Distributor 2 is not there yet: the publisher's second link keeps trying
        # while the first publishes, and the group starts as it is ranked.
        self.publisher = sdk_publisher(
            stack, "--publish-to-all", "--service", "MDCAST", "--items", ",".join(NAMES), "--rate", "400",
            "--duration", "600", distributors=",".join(f"127.0.0.1:{p}" for p in self.ports.values()))
        wait_for_log(self.server, f"({1 << 16 | 1}) is up", timeout=20)
        start_distributor(stack, 2, self.ports[2], "dist2")
        wait_for_log(self.server, f"({2 << 16 | 1}) is up", timeout=20)
        self.client = stack.client(1, "--service", "MDCAST", "--items", ",".join(NAMES), "--duration", "600")
        self.sdk = sdk_consumer(stack, [1], "--service", "MDCAST", "--items", ",".join(NAMES),
                                "--duration", "600")
        self.wait_served_by(1)

    def finish(self, switches, names=NAMES, statuses=0):
        for p in (self.client, self.sdk):
            p.popen.send_signal(signal.SIGINT)
            p.wait(10)
        check_raw_stream(messages(self.client), switches, names, expected=probe_fields,
                         seq_of=lambda f: int(f["ACVOL_1"]))
        check_sdk_stream(json_events(self.sdk), switches, names, statuses)


def test_distributor_killed_and_back_with_one_dual_homed_publisher():
    with Stack("dualhome") as stack:
        pair = DualHomed(stack)
        check(len(link_events(pair.publisher, pair.ports[1], "up")) == 1, "link 1 up once")
        pair.distributor(1).popen.kill()  # kill -9
        wait_for_events(pair.publisher, lambda _: link_events(pair.publisher, pair.ports[1], "down"), 15,
                        "the link to distributor 1 reported down")
        pair.wait_served_by(2)
        check(switch_lines(pair.server) == [("1", "2", "source_silent")], f"switches {switch_lines(pair.server)}")

        start_distributor(stack, 1, pair.ports[1], "dist1-again")
        wait_for_events(pair.publisher, lambda _: len(link_events(pair.publisher, pair.ports[1], "up")) == 2, 20,
                        "the publisher logged in to the restarted distributor 1")
        pair.wait_served_by(1)  # a standby first, active once it has stayed up for the hold-down
        check(switch_lines(pair.server) == [("1", "2", "source_silent"), ("2", "1", "preferred")],
              f"switches {switch_lines(pair.server)}")
        log = pair.server.log_text()
        check(log.rindex(f"({1 << 16 | 1}) is up") < log.index("moved from distributor 2 to distributor 1"),
              "distributor 1 was not heard again before the switch back")
        check(downs_since_up(pair.publisher, pair.ports[2]) == 0, "the link to distributor 2 went down")
        # Three moves: the failover (the items keep distributor 1's ids), the restart of
        # distributor 1 (its ids are void: the items take distributor 2's, one refresh each),
        # and the switch back.
        pair.finish(switches=3)
        pair.publisher.popen.send_signal(signal.SIGINT)
        check(pair.publisher.wait(15) == 0, "publisher exit code")
        summary = [e for e in json_events(pair.publisher) if e.get("event") == "summary"][-1]
        check(summary["connection_losses"] == 1 and summary["links_dropped"] == 0 and summary["outbox_full"] == 0,
              f"publisher summary {summary}")


def test_distributor_stopped_and_continued_with_one_dual_homed_publisher():
    """SIGSTOP of the active distributor: the server switches on its silence, the publisher's
    link to it times out while publishing goes on through distributor 2; SIGCONT: the link
    logs in again (taking its service from the stale connection), re-images it, and the items
    move back after the hold-down."""
    with Stack("dualhome-stop") as stack:
        pair = DualHomed(stack)
        dist1 = pair.distributor(1)
        dist1.popen.send_signal(signal.SIGSTOP)
        try:
            pair.wait_served_by(2)
            wait_for_events(pair.publisher, lambda _: link_events(pair.publisher, pair.ports[1], "down"), 20,
                            "the link to the stopped distributor 1 reported down")
        finally:
            dist1.popen.send_signal(signal.SIGCONT)
        wait_for_events(pair.publisher, lambda _: len(link_events(pair.publisher, pair.ports[1], "up")) == 2, 20,
                        "the publisher logged in to distributor 1 again")
        pair.wait_served_by(1)
        check(switch_lines(pair.server) == [("1", "2", "source_silent"), ("2", "1", "preferred")],
              f"switches {switch_lines(pair.server)}")
        check(downs_since_up(pair.publisher, pair.ports[2]) == 0, "the link to distributor 2 went down")
        pair.finish(switches=2)


if __name__ == "__main__":
    run([test_distributor_killed_and_back_with_one_dual_homed_publisher,
         test_distributor_stopped_and_continued_with_one_dual_homed_publisher])
