"""Several distributors and redundant groups: a server joins several backbones,
keeps each distributor apart by its distributor.id (ids never collide, a second
distributor is never mistaken for a restart), and takes the first copy of each
packet when one distributor sends on two groups."""
import re
import socket

from harness import BIN, Stack, check, free_port, run, wait_for_log, wait_for_port
from streams import check_full_stream, messages, sent_updates

ITEMS = 5
NAMES = [f"ITEM{i:06d}" for i in range(ITEMS)]


def last(log, key):
    values = re.findall(rf"\b{key}=(\d+)", log)
    check(values, f"no '{key}' counter in the log")
    return int(values[-1])


def add_distributor(stack, name, distributor_id, group, port, extra="", publisher_port=None):
    """Starts a distributor; its publisher port (`publisher_port`, else a free one) is returned."""
    publisher_port = publisher_port or free_port()
    cfg = stack.write(f"{name}.yaml", f"""
distributor:
  id: {distributor_id}
publishers:
  port: {publisher_port}
backbone:
  group: {group}
  port: {port}
{extra}""")
    p = stack.start(name, [BIN["distributor"], "--config", cfg])
    wait_for_port(publisher_port, p)
    return publisher_port


def add_source(stack, name, publisher_port, service):
    return stack.start(name, [BIN["source"], "--distributor", f"127.0.0.1:{publisher_port}", "--service", service,
                              "--items", str(ITEMS), "--rate", "500", "--duration", "3"])


def run_two_distributors(name, same_group):
    with Stack(name) as stack:
        group_b = stack.group if same_group else stack.group.rsplit(".", 1)[0] + ".254"
        port_b = stack.backbone_port if same_group else free_port(socket.SOCK_DGRAM)
        port_a = add_distributor(stack, "dist1", 1, stack.group, stack.backbone_port)
        port_b_pub = add_distributor(stack, "dist2", 2, group_b, port_b)
        server = stack.server(1, extra="" if same_group else f"  extra_groups: [\"{group_b}:{port_b}\"]")
        sources = [add_source(stack, "sourceA", port_a, "FEED_A"), add_source(stack, "sourceB", port_b_pub, "FEED_B")]
        for s in sources:
            wait_for_log(s, "items registered")
        clients = [stack.client(1, "--service", svc, "--items", ",".join(NAMES), "--duration", "5", name=f"client{svc}")
                   for svc in ("FEED_A", "FEED_B")]
        for s in sources:
            check(s.wait(20) == 0, f"{s.name} failed")
        for c in clients:
            check(c.wait(20) == 0, f"{c.name} exit code")
        server.stop()
        for client, source, distributor_id in zip(clients, sources, (1, 2)):
            lines = messages(client)
            check_full_stream(lines, NAMES, sent_updates(source), ITEMS, only_final_status=True)
            ids = {m["id"] >> 40 for m in lines if m["type"] in ("refresh", "update")}
            check(ids == {distributor_id}, f"{client.name}: item ids from distributors {ids}")
        log = server.log_text()
        check(last(log, "epoch_changes") == 0, "a second distributor was taken for a restart")
        check(last(log, "foreign_messages") == 0, "messages attributed to the wrong distributor")
        check("distributor 1 heard" in log and "distributor 2 heard" in log, "both distributors not seen")


def test_two_distributors_on_two_groups():
    run_two_distributors("twogroups", same_group=False)


def test_two_distributors_on_one_group_are_kept_apart():
    run_two_distributors("onegroup", same_group=True)


def test_redundant_groups_take_the_first_copy():
    with Stack("redundant") as stack:
        group_b = stack.group.rsplit(".", 1)[0] + ".253"
        port_b = free_port(socket.SOCK_DGRAM)
        both = f"  extra_groups: [\"{group_b}:{port_b}\"]"
        publisher_port = add_distributor(stack, "distAB", 3, stack.group, stack.backbone_port, extra=both)
        # 10 % loss on each path: a packet is missing only when both copies are lost.
        loss = "testing:\n  loss:\n    receive_rate: 0.10\n    seed: 13"
        server = stack.server(1, extra=both + "\n" + loss)
        source = add_source(stack, "source", publisher_port, "FEED")
        wait_for_log(source, "items registered")
        client = stack.client(1, "--service", "FEED", "--items", ",".join(NAMES), "--duration", "5")
        check(source.wait(20) == 0, "source failed")
        check(client.wait(20) == 0, "client exit code")
        server.stop()
        check_full_stream(messages(client), NAMES, sent_updates(source), ITEMS, only_final_status=True)
        log = server.log_text()
        check(last(log, "duplicates") > 100, "the second copies were not seen as duplicates")
        missing, dropped = last(log, "missing"), last(log, "injected_drops")
        check(missing < dropped / 3, f"{missing} packets missing for {dropped} dropped: the paths do not cover each other")


if __name__ == "__main__":
    run([test_two_distributors_on_two_groups, test_two_distributors_on_one_group_are_kept_apart,
         test_redundant_groups_take_the_first_copy])
