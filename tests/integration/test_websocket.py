"""The WebSocket/JSON port of mdcast-server (docs/websocket.md), black-box:
real distributor, server and source; Python's `websockets` as the client.
Login, image then every update in order with exact values, views, snapshots,
unknown and not-entitled items, the source going down (stale), a slow
consumer, and every kind of bad input — each answered or closed with a
reason and counted in /metrics, with nothing lost for a well-behaved client."""
import asyncio
import base64
import json
import os
import socket
import ssl
import urllib.error
import urllib.request

import websockets

from harness import (Stack, admin_port, check, free_port, metric, run, single_user_file,
                     wait_for_log, wait_for_port)
from streams import expected_fields, final_seq, sent_updates
from ws_client import by_name, collect_until, connect, login, receive, ws_section

ITEMS = 10


def ws_server(stack, extra_clients="", extra=""):
    port = free_port()
    server = stack.server(1, extra_clients=ws_section(port, extra_clients), extra=extra)
    wait_for_port(port, server)
    return server, port


def source_down(items):
    def done(messages):
        streams = by_name(messages)
        return all(streams.get(name) and streams[name][-1]["Type"] == "Status"
                   and streams[name][-1]["State"].get("Code") == "SourceDown" for name in items)
    return done


def check_stream(messages, names, total, view=None):
    streams = by_name(messages)
    for name in names:
        index = int(name[4:])
        got = streams[name]
        refresh = got[0]
        check(refresh["Type"] == "Refresh" and refresh["Key"] == {"Service": "MDCAST", "Name": name},
              f"{name}: first message {refresh}")
        check(refresh["State"]["Stream"] == "Open" and refresh["State"]["Data"] == "Ok",
              f"{name}: refresh state {refresh['State']}")
        want = expected_fields(index, refresh["SeqNumber"])
        if view:
            want = {k: v for k, v in want.items() if k in view}
            check(set(refresh["Fields"]) == set(view), f"{name}: view refresh fields {refresh['Fields']}")
        for key, value in want.items():
            check(refresh["Fields"][key] == value, f"{name}: refresh {key}={refresh['Fields'][key]} want {value}")
        seq = refresh["SeqNumber"]
        for update in (m for m in got if m["Type"] == "Update"):
            check(update["ID"] == refresh["ID"], f"{name}: update on stream {update['ID']}")
            check(update["SeqNumber"] == seq + 1, f"{name}: update seq {update['SeqNumber']} after {seq}")
            seq = update["SeqNumber"]
            want = expected_fields(index, seq)
            if view:
                want = {k: v for k, v in want.items() if k in view}
            check(update["Fields"] == want, f"{name}: update {seq} fields {update['Fields']} want {want}")
        check(seq == final_seq(index, total, ITEMS), f"{name}: last seq {seq}, want {final_seq(index, total, ITEMS)}")
        final = got[-1]
        check(final["Type"] == "Status" and final["State"]["Data"] == "Suspect"
              and final["State"]["Code"] == "SourceDown", f"{name}: not stale after the source left: {final}")
    return sum(1 for m in messages if m.get("Type") == "Update")


async def open_logged_in(port):
    ws = await connect(port)
    answer = await login(ws)
    check(answer["Type"] == "Refresh" and answer["Domain"] == "Login" and answer["ID"] == 1
          and answer["State"] == {"Stream": "Open", "Data": "Ok", "Text": ""}
          and answer["Key"]["Name"] == "tester", f"login refresh {answer}")
    return ws


def test_image_then_every_update_in_order():
    with Stack("ws-e2e") as stack:
        stack.distributor()
        server, port = ws_server(stack)
        admin = admin_port(server)
        source = stack.source("--items", str(ITEMS), "--rate", "400", "--duration", "3")
        wait_for_log(source, "items registered")
        names = ["ITEM000001", "ITEM000004", "ITEM000009"]

        async def scenario():
            full_a, full_b, view, snap = [await open_logged_in(port) for _ in range(4)]
            request = {"ID": 2, "Key": {"Service": "MDCAST", "Name": names}}
            await full_a.send(json.dumps(request))
            await full_b.send(json.dumps([dict(request, ID=5)]))  # an array of messages
            await view.send(json.dumps(dict(request, View=["BID", "ASK"])))
            await snap.send(json.dumps(dict(request, Streaming=False)))
            results = await asyncio.gather(*(collect_until(ws, source_down(names), 25)
                                             for ws in (full_a, full_b, view)))
            # The batch's own Status (LSEG's numbering), then one Refresh per name.
            snapshot = await collect_until(snap, lambda got: len(got) >= len(names) + 1)
            await asyncio.sleep(0.3)
            check(not snap.messages, f"snapshot stream went on: {list(snap.messages)[:2]}")
            for ws in (full_a, full_b, view, snap):
                await ws.close()
            return results, snapshot

        (a, b, v), snapshot = asyncio.run(scenario())
        check(source.wait(15) == 0, "source failed")
        total = sent_updates(source)
        updates_a = check_stream(a, names, total)
        check_stream(b, names, total)
        updates_v = check_stream(v, names, total, view={"BID", "ASK"})
        check(snapshot[0]["ID"] == 2 and snapshot[0]["Type"] == "Status", f"batch answer {snapshot[0]}")
        check(all(m["Type"] == "Refresh" and m["State"]["Stream"] == "NonStreaming" for m in snapshot[1:]),
              f"snapshot {snapshot}")
        check(sorted((m["ID"], m["Key"]["Name"]) for m in snapshot[1:]) == [(3, names[0]), (4, names[1]), (5, names[2])],
              f"a batch's names on ID+1, ID+2, ...: {snapshot}")
        # Encoded once per view: the two full subscribers share one encoding.
        encodings = metric(admin, "mdcast_server_ws_update_encodings_total")
        check(encodings == updates_a + updates_v,
              f"{encodings} JSON encodings for {updates_a} + {updates_v} distinct updates")


def test_requests_refused_with_a_status():
    with Stack("ws-status") as stack:
        users = single_user_file(stack, ["ITEM000001", "NOSUCH"])
        stack.distributor()
        server, port = ws_server(stack, extra=f"auth:\n  users_file: {users}\n")
        admin = admin_port(server)
        source = stack.source("--items", "3", "--rate", "50", "--duration", "20")
        wait_for_log(source, "items registered")

        async def scenario():
            refused = await connect(port)
            answer = await login(refused, "alice", "wrong")
            check(answer["Type"] == "Status" and answer["State"]["Stream"] == "Closed"
                  and answer["State"]["Code"] == "AuthFailed", f"bad password: {answer}")
            ws = await connect(port)
            answer = await login(ws, "alice", "alice-secret", login_id=7)
            check(answer["Type"] == "Refresh" and answer["ID"] == 7, f"login {answer}")
            await ws.send(json.dumps({"ID": 2, "Key": {"Service": "MDCAST", "Name": "ITEM000002"}}))
            denied = (await receive(ws))[0]
            check(denied["Type"] == "Status" and denied["ID"] == 2 and denied["Key"]["Name"] == "ITEM000002"
                  and denied["State"] == {"Stream": "Closed", "Data": "Suspect", "Code": "NotEntitled",
                                          "Text": "not entitled"}, f"not entitled: {denied}")
            await ws.send(json.dumps({"ID": 3, "Key": {"Service": "MDCAST", "Name": "NOSUCH"}}))
            unknown = (await receive(ws))[0]
            check(unknown["Type"] == "Status" and unknown["ID"] == 3 and unknown["State"]["Stream"] == "Closed"
                  and unknown["State"]["Code"] == "NotFound", f"unknown item: {unknown}")
            await ws.send(json.dumps({"ID": 4, "Key": {"Service": "MDCAST", "Name": "ITEM000001"},
                                      "View": ["BID", "NOPE"]}))
            bad_view = (await receive(ws))[0]
            check(bad_view["ID"] == 4 and bad_view["State"]["Code"] == "InvalidRequest"
                  and "NOPE" in bad_view["State"]["Text"],
                  f"bad view: {bad_view}")
            await ws.send(json.dumps({"Type": "Ping"}))
            check((await receive(ws))[0] == {"Type": "Pong"}, "no Pong")
            await ws.send(json.dumps({"ID": 5, "Key": {"Service": "MDCAST", "Name": "ITEM000001"}}))
            image = (await receive(ws))[0]
            # Streams carry the request's ID (LSEG's numbering), not the server's item id.
            check(image["Type"] == "Refresh" and image["ID"] == 5 and image["Key"]["Name"] == "ITEM000001",
                  f"image {image}")
            update = (await receive(ws))[0]
            check(update["Type"] == "Update" and update["ID"] == image["ID"], f"update {update}")
            # Close the stream: no more updates once the answer to a Ping is in.
            await ws.send(json.dumps({"ID": image["ID"], "Type": "Close"}))
            await ws.send(json.dumps({"Type": "Ping"}))
            while (message := (await receive(ws))[0])["Type"] != "Pong":
                check(message["Type"] == "Update", f"after close: {message}")
            await asyncio.sleep(0.3)
            check(not ws.messages, f"updates after Close: {list(ws.messages)[:1]}")
            await ws.close()

        asyncio.run(scenario())
        check(metric(admin, "mdcast_server_not_entitled_total") == 1, "denial not counted")


def masked(opcode, fin, text):
    """A client frame (masked, as RFC 6455 requires of clients)."""
    payload = text.encode() if isinstance(text, str) else text
    mask = os.urandom(4)
    length = bytes([0x80 | 126]) + len(payload).to_bytes(2, "big") if len(payload) > 125 \
        else bytes([0x80 | len(payload)])
    return bytes([(0x80 if fin else 0) | opcode]) + length + mask + \
        bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def raw_ws(port, receive_buffer=0):
    """A raw socket, upgraded and logged in (the login answer not read)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if receive_buffer:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: " + base64.b64encode(os.urandom(16)) +
              b"\r\nSec-WebSocket-Version: 13\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    check(head.startswith(b"HTTP/1.1 101"), f"no upgrade: {head}")
    s.sendall(masked(1, True, json.dumps({"ID": 1, "Domain": "Login", "Key": {"Name": "raw"}})))
    return s


def raw_close(s, what):
    """Reads to the server's close frame: (code, reason)."""
    data = b""
    while True:
        chunk = s.recv(65536)
        check(chunk, f"{what}: connection ended without a close frame")
        data += chunk
        while len(data) >= 2:
            length = data[1] & 0x7f
            start = 2 if length < 126 else 4
            if length == 126 and len(data) >= 4:
                length = int.from_bytes(data[2:4], "big")
            if len(data) < start + length:
                break
            if data[0] == 0x88:
                body = data[start:start + length]
                return int.from_bytes(body[:2], "big"), body[2:].decode()
            data = data[start + length:]


async def closed_with(ws, code, what, sending=None):
    """The server closes `ws` with `code` (while it is sending `sending`, if given)."""
    try:
        if sending is not None:
            await ws.send(sending)
        while True:
            await asyncio.wait_for(ws.recv(), 5)
    except websockets.ConnectionClosed:
        pass
    await asyncio.wait_for(ws.wait_closed(), 5)
    rcvd = ws.close_rcvd
    check(rcvd is not None and rcvd.code == code, f"{what}: closed with {rcvd} (want code {code})")
    return rcvd.reason


def test_bad_input_is_answered_or_closed_with_a_reason():
    with Stack("ws-bad") as stack:
        stack.distributor()
        server, port = ws_server(stack, extra_clients="  ws_max_message_bytes: 4096\n  ws_max_fragments: 8\n")
        admin = admin_port(server)
        source = stack.source("--items", "3", "--rate", "200", "--duration", "20")
        wait_for_log(source, "items registered")

        async def scenario():
            # A well-behaved client subscribed all along: it loses nothing.
            good = await open_logged_in(port)
            await good.send(json.dumps({"ID": 2, "Key": {"Service": "MDCAST", "Name": "ITEM000001"}}))
            first = (await receive(good))[0]
            seq = first["SeqNumber"]

            ws = await open_logged_in(port)
            for text, kind in (("{not json", "not JSON"), ('{"Type":"Refresh","ID":3}', "unknown message Type"),
                               ('{"ID":"x","Key":{}}', "ID is not an integer"),
                               ('{"ID":4,"Domain":"MarketMaker","Key":{"Name":"x"}}', "is not served"),
                               ("[" * 40 + "]" * 40, "nested deeper")):
                await ws.send(text)
                error = (await receive(ws))[0]
                check(error["Type"] == "Error" and kind in error["Text"], f"{text!r}: {error}")
            await ws.close()

            early = await connect(port)  # a request before the login
            await early.send(json.dumps({"ID": 2, "Key": {"Service": "MDCAST", "Name": "ITEM000001"}}))
            reason = await closed_with(early, 1008, "request before login")
            check("not_logged_in" in reason, f"reason {reason!r}")

            big = await open_logged_in(port)
            reason = await closed_with(big, 1009, "message over the limit", "x" * 5000)
            check("ws_max_message_bytes" in reason, f"reason {reason!r}")

            flood = raw_ws(port)
            flood.sendall(masked(1, False, "{") + b"".join(masked(0, False, " ") for _ in range(20)) +
                          masked(0, True, "}"))
            code, reason = raw_close(flood, "fragmented flood")
            check(code == 1008 and "fragmented flood" in reason, f"flood: {code} {reason!r}")
            flood.close()

            # Framing errors wslay finds: invalid UTF-8 in a text message, an unmasked frame.
            for frame, code in ((masked(1, True, b'{"Type":"Ping","x":"\xff"}'), 1007),
                                (bytes([0x81, 0x05]) + b"hello", 1002)):
                bad = raw_ws(port)
                bad.sendall(frame)
                check(raw_close(bad, "framing error")[0] == code, f"framing error: want close {code}")
                bad.close()

            binary = await open_logged_in(port)
            await closed_with(binary, 1003, "binary message", b"\x01\x02")

            # Fragments within the limit are reassembled.
            fragmented = await open_logged_in(port)
            await fragmented.send(iter(['{"Type":', '"Ping"}']))
            check((await receive(fragmented))[0] == {"Type": "Pong"}, "fragmented Ping not answered")
            await fragmented.close()

            while True:
                message = (await receive(good))[0]
                check(message["Type"] == "Update" and message["SeqNumber"] == seq + 1,
                      f"the good client lost data: {message} after {seq}")
                seq = message["SeqNumber"]
                if seq >= first["SeqNumber"] + 20:
                    break
            await good.close()

        asyncio.run(scenario())
        for name, want in (('mdcast_server_ws_json_errors_total{kind="not_json"}', 2),
                           ('mdcast_server_ws_json_errors_total{kind="unknown_type"}', 2),
                           ('mdcast_server_ws_json_errors_total{kind="bad_request"}', 1),
                           ("mdcast_server_ws_too_large_total", 1),
                           ("mdcast_server_ws_fragment_floods_total", 1),
                           ("mdcast_server_ws_binary_refused_total", 1),
                           ("mdcast_server_ws_protocol_errors_total", 2),
                           ('mdcast_server_closes_total{reason="not_logged_in"}', 1),
                           ('mdcast_server_closes_total{reason="frame_too_large"}', 1)):
            check(metric(admin, name) == want, f"{name} = {metric(admin, name)}, want {want}")


def test_http_page_and_refusals():
    with Stack("ws-http") as stack:
        web = os.path.join(stack.dir, "web")
        os.mkdir(web)
        with open(os.path.join(web, "index.html"), "w") as f:
            f.write("<!doctype html><title>watchlist</title>")
        server, port = ws_server(stack, extra_clients=f"  ws_web_dir: {web}\n")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
            check(response.status == 200 and b"watchlist" in response.read(), "page not served")
        for path, code in (("/other", 404),):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5)
                check(False, f"{path} answered 200")
            except urllib.error.HTTPError as error:
                check(error.code == code, f"{path}: {error.code}")
        # A bad handshake (no key) is refused with 400.
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
        check(s.recv(100).startswith(b"HTTP/1.1 400"), "bad handshake not refused")
        s.close()
        # The accept key of RFC 6455's example.
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        check(b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" in s.recv(300), "accept key")
        s.close()


def stuck_ws_subscriber(port, items):
    """Upgrades, logs in, subscribes to `items` items and reads nothing."""
    s = raw_ws(port, receive_buffer=4096)
    s.sendall(masked(1, True, json.dumps({"ID": 2, "Key": {"Service": "MDCAST",
                                                          "Name": [f"ITEM{i:06d}" for i in range(items)]}})))
    return s


def test_slow_consumer_is_closed_and_others_lose_nothing():
    with Stack("ws-slow") as stack:
        stack.distributor()
        server, port = ws_server(
            stack, extra="output:\n  max_bytes: 65536\n  guaranteed_bytes: 16384\n  tcp_send_buffer_bytes: 4096\n")
        admin = admin_port(server)
        source = stack.source("--items", "20", "--rate", "4000", "--duration", "6")
        wait_for_log(source, "items registered")

        async def scenario():
            good = await open_logged_in(port)
            await good.send(json.dumps({"ID": 2, "Key": {"Service": "MDCAST", "Name": "ITEM000003"}}))
            stuck = stuck_ws_subscriber(port, 20)
            got = await collect_until(good, source_down(["ITEM000003"]), 30)
            stuck.close()
            await good.close()
            return got

        got = asyncio.run(scenario())
        check(source.wait(15) == 0, "source failed")
        total = sent_updates(source)
        streams = by_name(got)["ITEM000003"]
        seqs = [m["SeqNumber"] for m in streams if m["Type"] == "Update"]
        check(seqs == list(range(streams[0]["SeqNumber"] + 1, final_seq(3, total, 20) + 1)),
              f"the good client missed updates: {len(seqs)} updates, ends at {seqs[-1:]}")
        check(metric(admin, 'mdcast_server_closes_total{reason="slow_consumer"}') == 1,
              "the stuck WebSocket client was not closed as a slow consumer")


def test_wss_with_the_tls_certificate():
    from test_tls import Pki  # the test CA of the TLS tests
    with Stack("ws-tls") as stack:
        pki = Pki(stack.dir)
        cert, key = pki.issue("server", "localhost")
        stack.distributor()
        server, port = ws_server(stack, extra_clients="  ws_tls: true\n",
                                 extra=f"tls:\n  cert_file: {cert}\n  key_file: {key}\n")
        source = stack.source("--items", "3", "--rate", "50", "--duration", "20")
        wait_for_log(source, "items registered")

        async def scenario():
            context = ssl.create_default_context(cafile=pki.ca)
            ws = await websockets.connect(f"wss://localhost:{port}/", ssl=context, open_timeout=5,
                                          ping_interval=None)
            answer = await login(ws)
            check(answer["Type"] == "Refresh" and answer["Domain"] == "Login", f"login over TLS: {answer}")
            await ws.send(json.dumps({"ID": 2, "Key": {"Service": "MDCAST", "Name": "ITEM000002"}}))
            image = (await receive(ws))[0]
            check(image["Type"] == "Refresh" and image["Key"]["Name"] == "ITEM000002", f"image {image}")
            await ws.close()
            try:  # plaintext on the wss:// port is not a WebSocket
                plain = await connect(port)
                await plain.close()
                check(False, "ws:// accepted on a wss:// port")
            except (OSError, websockets.InvalidHandshake, asyncio.TimeoutError):
                pass

        asyncio.run(scenario())


if __name__ == "__main__":
    run([test_image_then_every_update_in_order, test_requests_refused_with_a_status,
         test_bad_input_is_answered_or_closed_with_a_reason, test_http_page_and_refusals,
         test_slow_consumer_is_closed_and_others_lose_nothing, test_wss_with_the_tls_certificate])
