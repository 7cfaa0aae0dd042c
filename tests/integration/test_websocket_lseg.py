"""Conformance of the WebSocket/JSON port with the LSEG (Refinitiv) Real-Time
WebSocket API as published (its API description and the public examples
market_price.py, market_price_ping.py, market_price_batch_view.py): what an
LSEG client relies on, black-box against the real server, distributor and
source. The differences that remain are listed in docs/websocket.md."""
import asyncio
import json

from harness import Stack, check, free_port, run, wait_for_log, wait_for_port
from ws_client import connect, ws_section


async def receive_array(ws, timeout=10):
    """The next text message, which must be a JSON array of objects (LSEG's framing)."""
    text = await asyncio.wait_for(ws.recv(), timeout)
    message = json.loads(text)
    check(isinstance(message, list) and message and all(isinstance(m, dict) for m in message),
          f"not an array of objects: {text[:200]}")
    return message


async def next_of_type(ws, kind, timeout=10):
    """The next message of Type `kind`, every message on the way checked for framing."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        left = deadline - loop.time()
        check(left > 0, f"no {kind} within {timeout} s")
        for message in await receive_array(ws, left):
            if message.get("Type") == kind:
                return message


async def lseg_login(ws):
    """The login of LSEG's market_price.py, as sent there (an object, not an array)."""
    await ws.send(json.dumps({"ID": 1, "Domain": "Login",
                              "Key": {"Name": "lseg-example",
                                      "Elements": {"ApplicationId": "256", "Position": "127.0.0.1"}}}))
    return await next_of_type(ws, "Refresh")


def test_framing_login_default_service_view_and_ping():
    with Stack("ws-lseg") as stack:
        stack.distributor()
        port = free_port()
        server = stack.server(1, extra_clients=ws_section(port, "  ws_default_service: MDCAST\n"))
        wait_for_port(port, server)
        source = stack.source("--items", "3", "--rate", "50", "--duration", "30")
        wait_for_log(source, "items registered")

        async def scenario():
            ws = await connect(port)
            refresh = await lseg_login(ws)
            # The ping example reads PingTimeout from the top-level Elements.
            check(refresh["Domain"] == "Login" and refresh["ID"] == 1, f"login refresh {refresh}")
            check(isinstance(refresh.get("Elements", {}).get("PingTimeout"), int)
                  and refresh["Elements"]["PingTimeout"] > 0, f"no top-level PingTimeout: {refresh}")
            check("Elements" not in refresh["Key"], f"login terms inside Key: {refresh['Key']}")
            check(refresh["State"]["Stream"] == "Open" and refresh["State"]["Data"] == "Ok",
                  f"login state {refresh['State']}")

            # market_price.py's request names no service: the server's default serves it.
            await ws.send(json.dumps({"ID": 2, "Key": {"Name": "ITEM000001"}}))
            image = await next_of_type(ws, "Refresh")
            check(image["Key"] == {"Service": "MDCAST", "Name": "ITEM000001"}, f"image {image}")
            check(image["State"]["Data"] == "Ok" and image["Fields"], f"image {image}")
            update = await next_of_type(ws, "Update")
            check(update["Fields"], f"empty update {update}")

            # A View by field id (22 BID, 25 ASK in etc/fields.dict) and by name mixed.
            await ws.send(json.dumps([{"ID": 3, "Key": {"Name": "ITEM000002"}, "View": [22, "ASK"],
                                       "Streaming": False}]))
            snapshot = await next_of_type(ws, "Refresh")
            check(snapshot["Key"]["Name"] == "ITEM000002" and set(snapshot["Fields"]) == {"BID", "ASK"},
                  f"view by id: {snapshot}")
            check(snapshot["State"]["Stream"] == "NonStreaming", f"snapshot state {snapshot['State']}")

            # market_price_ping.py answers the server's Ping; a client's Ping is answered too.
            await ws.send(json.dumps({"Type": "Ping"}))
            await next_of_type(ws, "Pong")

            # An error in LSEG's shape: Type Error, Text, Debug.
            await ws.send(json.dumps({"ID": "x", "Key": {"Name": "ITEM000001"}}))
            error = await next_of_type(ws, "Error")
            check(error["Text"] and "Message" in error["Debug"], f"error {error}")
            await ws.close()

        asyncio.run(scenario())


def test_no_default_service_refuses_a_request_without_one():
    with Stack("ws-lseg-nosvc") as stack:
        stack.distributor()
        port = free_port()
        server = stack.server(1, extra_clients=ws_section(port))
        wait_for_port(port, server)

        async def scenario():
            ws = await connect(port)
            await lseg_login(ws)
            await ws.send(json.dumps({"ID": 2, "Key": {"Name": "ITEM000001"}}))
            error = await next_of_type(ws, "Error")
            check("Key.Service missing" in error["Text"] and "ws_default_service" in error["Text"],
                  f"error {error}")
            await ws.close()

        asyncio.run(scenario())


if __name__ == "__main__":
    run([test_framing_login_default_service_view_and_ping,
         test_no_default_service_refuses_a_request_without_one])
