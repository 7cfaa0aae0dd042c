"""clients.ws_publish_time: with it on, every JSON Update carries "PublishTime", the
publisher's stamp (unix ns, within a minute of now here), as do Refreshes of images that
updates followed, and a conflated Update its latest merged update's; a SIGHUP that turns it off
takes it out of the Updates encoded after the reload. Without it no message carries one."""
import asyncio
import json
import os
import signal
import time

from harness import Stack, check, free_port, run, wait_for_log
from ws_client import collect_until, connect, login, ws_section

MINUTE_NS = 60 * 10**9


def updates(messages, item_id):
    return [m for m in messages if m.get("Type") == "Update" and m["ID"] == item_id]


async def stream(port, request, count):
    """The Refresh and `count` Updates of one request (ID 2)."""
    ws = await connect(port)
    try:
        check((await login(ws))["Type"] == "Refresh", "login refused")
        await ws.send(json.dumps({"ID": 2, "Key": {"Service": "MDCAST", "Name": "ITEM000000"}, **request}))
        got = await collect_until(ws, lambda ms: len(updates(ms, 2)) >= count)
    finally:
        await ws.close()
    refresh = next(m for m in got if m.get("Type") == "Refresh" and m["ID"] == 2)
    return refresh, updates(got, 2)


def test_publish_time_on_conflated_and_reloaded_off():
    with Stack("ws-publish-time") as stack:
        stack.distributor()
        port = free_port()
        server = stack.server(1, extra_clients=ws_section(port, "  ws_publish_time: true\n"))
        wait_for_log(server, "WebSocket/JSON on")
        source = stack.source("--items", "1", "--rate", "100", "--duration", "60")
        wait_for_log(source, "items registered")

        refresh, got = asyncio.run(stream(port, {}, 5))
        now = time.time_ns()
        for m in got:
            check(isinstance(m.get("PublishTime"), int) and abs(now - m["PublishTime"]) < MINUTE_NS, f"update: {m}")
        check(all(a["PublishTime"] <= b["PublishTime"] for a, b in zip(got, got[1:])), f"stamps go back: {got}")
        check(isinstance(refresh.get("PublishTime"), int) and abs(now - refresh["PublishTime"]) < MINUTE_NS,
              f"the image followed by updates carries no stamp: {refresh}")

        qos = {"Qos": {"Timeliness": "Realtime", "Rate": "TimeConflated", "RateInfo": 200}}
        _, got = asyncio.run(stream(port, qos, 3))
        merged = [m for m in got if m.get("Conflated")]
        check(merged, f"no conflated update at 100/s paced to 200 ms: {got}")
        for m in merged:
            count, span_ms = m["ConflationInfo"]["Count"], m["ConflationInfo"]["Time"]
            check(count >= 1 and isinstance(m.get("PublishTime"), int), f"conflated update: {m}")
            check(span_ms <= 1000, f"a 200 ms interval spanning {span_ms} ms: {m}")

        config = os.path.join(stack.dir, "server1.yaml")
        with open(config) as f:
            text = f.read()
        with open(config, "w") as f:
            f.write(text.replace("ws_publish_time: true", "ws_publish_time: false"))
        os.kill(server.popen.pid, signal.SIGHUP)
        wait_for_log(server, "SIGHUP: applied clients.ws_publish_time")
        refresh, got = asyncio.run(stream(port, {}, 3))
        check(all("PublishTime" not in m for m in [refresh, *got]), f"stamped after the reload: {refresh} {got}")


if __name__ == "__main__":
    run([test_publish_time_on_conflated_and_reloaded_off])
