#!/usr/bin/env python3
"""WebSocket/JSON figures of one mdcast-server instance (docs/benchmarks.md,
"WebSocket clients"), until mdcast-bench runs its fanout with WebSocket clients:

  ws_measure.py idle [N]                 N idle WebSocket connections (upgraded, logged
                                         in): the server's RSS per connection
  ws_measure.py cpu binary|websocket RATE CLIENTS
                                         a source at RATE updates/s over 100 items, CLIENTS
                                         connections each subscribed to every item: updates/s
                                         out and server CPU per update out, from /metrics

It starts a private stack on loopback with the test harness (tests/integration/harness.py)
and the binaries named by MDCAST_SERVER, MDCAST_DISTRIBUTOR, MDCAST_SOURCE, MDCAST_CLIENT and
MDCAST_ETC (as the integration tests do). The WebSocket clients are Python asyncio sockets
that count bytes and never parse JSON, so they read in large chunks: the server writes in
larger batches to them than to mdcast-client, which reads as fast as it can; compare with
that in mind."""
import asyncio
import base64
import json
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tests/integration"))
from harness import Stack, admin_port, free_port, metric, wait_for_log, wait_for_port  # noqa: E402
from ws_client import ws_section  # noqa: E402

ITEMS = 100
WINDOW_S = 10


def masked(text):
    payload = text.encode()
    mask = os.urandom(4)
    length = bytes([0x80 | 126]) + len(payload).to_bytes(2, "big") if len(payload) > 125 \
        else bytes([0x80 | len(payload)])
    return bytes([0x81]) + length + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


async def open_ws(port, requests):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 b"Sec-WebSocket-Key: " + base64.b64encode(os.urandom(16)) +
                 b"\r\nSec-WebSocket-Version: 13\r\n\r\n")
    await reader.readuntil(b"\r\n\r\n")
    writer.write(masked(json.dumps({"ID": 1, "Domain": "Login", "Key": {"Name": "bench"}})))
    for request in requests:
        writer.write(masked(json.dumps(request)))
    return reader, writer


def idle(count):
    resource.setrlimit(resource.RLIMIT_NOFILE, (count + 1000, count + 1000))

    async def run(port, admin):
        before = metric(admin, "process_resident_memory_bytes")
        connections = []
        for start in range(0, count, 500):
            batch = await asyncio.gather(*(open_ws(port, []) for _ in range(min(500, count - start))))
            for reader, _ in batch:
                await reader.read(400)  # the login answer
            connections += batch
        await asyncio.sleep(1)
        after = metric(admin, "process_resident_memory_bytes")
        print(f"{count} idle WebSocket connections: server RSS {before / 2**20:.1f} -> {after / 2**20:.1f} MiB, "
              f"{(after - before) / count / 1024:.1f} KiB per connection")
        for _, writer in connections:
            writer.close()

    with Stack("ws-idle") as stack:
        port = free_port()
        server = stack.server(1, extra_clients=ws_section(
            port, f"  max_connections: {count + 10}\n  idle_timeout_ms: 0\n  login_timeout_ms: 600000\n"))
        wait_for_port(port, server)
        asyncio.run(asyncio.wait_for(run(port, admin_port(server)), 300))


def measure(admin):
    cpu0, out0 = metric(admin, "process_cpu_seconds_total"), metric(admin, "mdcast_server_updates_out_total")
    time.sleep(WINDOW_S)
    cpu1, out1 = metric(admin, "process_cpu_seconds_total"), metric(admin, "mdcast_server_updates_out_total")
    return (out1 - out0) / WINDOW_S, (cpu1 - cpu0) / max(out1 - out0, 1) * 1e9


def cpu(mode, rate, clients):
    names = [f"ITEM{i:06d}" for i in range(ITEMS)]
    with Stack("ws-cpu") as stack:
        stack.distributor()
        port = free_port()
        server = stack.server(1, extra_clients=ws_section(port, "  idle_timeout_ms: 0\n"))
        wait_for_port(port, server)
        admin = admin_port(server)
        source = stack.source("--items", str(ITEMS), "--rate", str(rate), "--duration", str(WINDOW_S + 8))
        wait_for_log(source, "items registered")
        if mode == "binary":
            stack.client(1, "--items", ",".join(names), "--connections", str(clients), "--output", "none",
                         "--duration", str(WINDOW_S + 6), name="binary")
            time.sleep(3)
            out_rate, ns = measure(admin)
        else:
            async def run():
                request = {"ID": 2, "Key": {"Service": "MDCAST", "Name": names}}
                sockets = [await open_ws(port, [request]) for _ in range(clients)]
                stop = asyncio.Event()

                async def drain(reader):
                    while not stop.is_set() and await reader.read(1 << 16):
                        pass
                tasks = [asyncio.create_task(drain(reader)) for reader, _ in sockets]
                await asyncio.sleep(3)
                result = await asyncio.get_running_loop().run_in_executor(None, measure, admin)
                stop.set()
                await asyncio.wait(tasks, timeout=5)
                return result
            out_rate, ns = asyncio.run(run())
        print(f"{mode}: {clients} connections x {ITEMS} items, {rate}/s in: {out_rate:,.0f} updates/s out, "
              f"server CPU {ns:,.0f} ns per update out")


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "idle":
        idle(int(sys.argv[2]) if len(sys.argv) > 2 else 10000)
    elif len(sys.argv) == 5 and sys.argv[1] == "cpu" and sys.argv[2] in ("binary", "websocket"):
        cpu(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(__doc__)
