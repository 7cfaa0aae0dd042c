#!/usr/bin/env python3
"""The idle WebSocket figure of one mdcast-server instance (docs/benchmarks.md,
"WebSocket clients"): server memory per idle connection. Fan-out throughput and
server CPU per update over WebSocket are measured by `mdcast-bench fanout
--client ws`.

  ws_measure.py idle [N]                 N idle WebSocket connections (upgraded, logged
                                         in): the server's RSS per connection

It starts a private stack on loopback with the test harness (tests/integration/harness.py)
and the binary named by MDCAST_SERVER (as the integration tests do)."""
import asyncio
import base64
import json
import os
import resource
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tests/integration"))
from harness import Stack, admin_port, free_port, metric, wait_for_port  # noqa: E402
from ws_client import ws_section  # noqa: E402


def masked(text):
    payload = text.encode()
    mask = os.urandom(4)
    length = bytes([0x80 | 126]) + len(payload).to_bytes(2, "big") if len(payload) > 125 \
        else bytes([0x80 | len(payload)])
    return bytes([0x81]) + length + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


async def open_ws(port):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 b"Sec-WebSocket-Key: " + base64.b64encode(os.urandom(16)) +
                 b"\r\nSec-WebSocket-Version: 13\r\n\r\n")
    await reader.readuntil(b"\r\n\r\n")
    writer.write(masked(json.dumps({"ID": 1, "Domain": "Login", "Key": {"Name": "bench"}})))
    return reader, writer


def idle(count):
    resource.setrlimit(resource.RLIMIT_NOFILE, (count + 1000, count + 1000))

    async def run(port, admin):
        before = metric(admin, "process_resident_memory_bytes")
        connections = []
        for start in range(0, count, 500):
            batch = await asyncio.gather(*(open_ws(port) for _ in range(min(500, count - start))))
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


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "idle":
        idle(int(sys.argv[2]) if len(sys.argv) > 2 else 10000)
    else:
        sys.exit(__doc__)
