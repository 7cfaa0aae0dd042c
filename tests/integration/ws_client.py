"""A WebSocket/JSON client for the tests (Python's `websockets` from Debian,
asyncio API), speaking the protocol of docs/websocket.md."""
import asyncio
import json
import os
from decimal import Decimal

import websockets

from harness import check


def ws_section(port, extra=""):
    """The clients: keys of a WebSocket port (to go under clients:)."""
    return f"  ws_port: {port}\n  ws_dictionary_file: {os.environ.get('MDCAST_ETC', 'etc')}/fields.dict\n{extra}"


async def connect(port, **kwargs):
    return await websockets.connect(f"ws://127.0.0.1:{port}/WebSocket", subprotocols=["tr_json2"],
                                    open_timeout=5, max_size=None, ping_interval=None, **kwargs)


async def receive(ws, timeout=5):
    """The next JSON messages (a list: the server sends one object per text message)."""
    text = await asyncio.wait_for(ws.recv(), timeout)
    message = json.loads(text, parse_float=Decimal)
    return message if isinstance(message, list) else [message]


async def login(ws, user="tester", password="", login_id=1):
    await ws.send(json.dumps({"ID": login_id, "Domain": "Login",
                              "Key": {"Name": user, "Elements": {"ApplicationId": "256",
                                                                  "Position": "127.0.0.1",
                                                                  "Password": password}}}))
    return (await receive(ws))[0]


async def collect_until(ws, done, timeout=20):
    """Every message until done(messages) is true or the time is up."""
    got = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not done(got):
        left = deadline - loop.time()
        if left <= 0:
            raise AssertionError(f"timed out after {len(got)} messages; last: {got[-3:]}")
        got.extend(await receive(ws, left))
    return got


def by_name(messages):
    """Messages per item name: the Key of each stream's first message names it."""
    names, items = {}, {}
    for m in messages:
        if m.get("Type") not in ("Refresh", "Update", "Status") or m.get("Domain") == "Login":
            continue
        if "Key" in m:
            names[m["ID"]] = m["Key"]["Name"]
        name = names.get(m["ID"]) if m["ID"] else m["Key"]["Name"]
        items.setdefault(name, []).append(m)
    return items
