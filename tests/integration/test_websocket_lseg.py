"""Conformance of the WebSocket/JSON port with the LSEG (Refinitiv) Real-Time
WebSocket API as published (its API description and the public examples
market_price.py, market_price_ping.py, market_price_batch_view.py): what an
LSEG client relies on, black-box against the real server, distributor and
source. The differences that remain are listed in docs/websocket.md."""
import asyncio
import json
import os

from harness import ETC, Stack, admin_port, check, free_port, metric, run, wait_for_log, wait_for_port
from ws_client import connect, ws_section


async def receive_array(ws, timeout=10):
    """The next text message, which must be a JSON array of objects (LSEG's framing)."""
    text = await asyncio.wait_for(ws.recv(), timeout)
    message = json.loads(text)
    check(isinstance(message, list) and message and all(isinstance(m, dict) for m in message),
          f"not an array of objects: {text[:200]}")
    return message


async def until_type(ws, kind, timeout=10):
    """The next message of Type `kind` and those before it, every message checked for framing."""
    before = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        left = deadline - loop.time()
        check(left > 0, f"no {kind} within {timeout} s")
        for message in await receive_array(ws, left):
            if message.get("Type") == kind:
                return message, before
            before.append(message)


async def next_of_type(ws, kind, timeout=10):
    """The next message of Type `kind`."""
    return (await until_type(ws, kind, timeout))[0]


async def lseg_login(ws):
    """The login of LSEG's market_price.py, as sent there (an object, not an array)."""
    await ws.send(json.dumps({"ID": 1, "Domain": "Login",
                              "Key": {"Name": "lseg-example",
                                      "Elements": {"ApplicationId": "256", "Position": "127.0.0.1"}}}))
    return await next_of_type(ws, "Refresh")


def start_served_stack(stack, rate):
    """Distributor, a server with a WebSocket port serving MDCAST by default, and a source of
    three items; returns the WebSocket port."""
    stack.distributor()
    port = free_port()
    server = stack.server(1, extra_clients=ws_section(port, "  ws_default_service: MDCAST\n"))
    wait_for_port(port, server)
    source = stack.source("--items", "3", "--rate", str(rate), "--duration", "60")
    wait_for_log(source, "items registered")
    return port


def test_framing_login_default_service_view_and_ping():
    with Stack("ws-lseg") as stack:
        port = start_served_stack(stack, 50)

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

            # The Source directory: each service's Info and State filters, keyed by service id.
            await ws.send(json.dumps({"ID": 5, "Domain": "Source", "Key": {}}))
            directory = await next_of_type(ws, "Refresh")
            check(directory["ID"] == 5 and directory["Domain"] == "Source", f"directory {directory}")
            services = {}
            for entry in directory["Map"]["Entries"]:
                filters = {f["ID"]: f["Elements"] for f in entry["FilterList"]["Entries"]}
                services[filters[1]["Name"]] = filters
            check(services["MDCAST"][2] == {"ServiceState": 1, "AcceptingRequests": 1}
                  and services["MDCAST"][1]["Capabilities"] == [6], f"MDCAST in the directory: {services}")
            # Key.Filter picks the filter entries: 2, State alone (the Refresh's Key says so).
            await ws.send(json.dumps({"ID": 6, "Domain": "Source", "Key": {"Filter": 2}}))
            states = await next_of_type(ws, "Refresh")
            check(states["ID"] == 6 and states["Key"] == {"Filter": 2}, f"directory by filter {states}")
            check(all([f["ID"] for f in e["FilterList"]["Entries"]] == [2] for e in states["Map"]["Entries"]),
                  f"filter 2 is State alone: {states['Map']}")

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


async def messages_until_pong(ws, timeout=10):
    """Every message up to the answer to a Ping sent now: what the server sent before it."""
    await ws.send(json.dumps({"Type": "Ping"}))
    return (await until_type(ws, "Pong", timeout))[1]


async def collect(ws, seconds):
    """Every message for `seconds`, then up to a Pong."""
    await asyncio.sleep(seconds)
    return await messages_until_pong(ws)


def test_streams_are_the_clients_ids():
    """LSEG's clients match every message by the ID they asked on (the posting example,
    lseg-data): a single request streams on its ID, a batch answers on its ID and opens
    its names on ID+1, ID+2, ...; the same item may be open on two IDs; Close names them."""
    with Stack("ws-lseg-ids") as stack:
        port = start_served_stack(stack, 300)

        async def scenario():
            ws = await connect(port)
            await lseg_login(ws)
            await ws.send(json.dumps({"ID": 2, "Key": {"Name": "ITEM000001"}}))
            await ws.send(json.dumps({"ID": 10, "Key": {"Name": ["ITEM000000", "ITEM000001", "ITEM000002"]}}))
            got = await collect(ws, 1.0)
            batch = [m for m in got if m.get("ID") == 10]
            check(len(batch) == 1 and batch[0]["Type"] == "Status"
                  and batch[0]["State"]["Stream"] == "Closed" and batch[0]["State"]["Data"] == "Ok",
                  f"the batch's own ID: {batch}")
            refreshes = {m["ID"]: m["Key"]["Name"] for m in got if m["Type"] == "Refresh"}
            check(refreshes == {2: "ITEM000001", 11: "ITEM000000", 12: "ITEM000001", 13: "ITEM000002"},
                  f"refreshes by ID: {refreshes}")
            ids = {m["ID"] for m in got if m["Type"] == "Update"}
            check(ids == {2, 11, 12, 13}, f"updates on IDs {sorted(ids)}")
            # The same item on two IDs: the same updates on both.
            on_2 = [m["SeqNumber"] for m in got if m["Type"] == "Update" and m["ID"] == 2]
            on_12 = [m["SeqNumber"] for m in got if m["Type"] == "Update" and m["ID"] == 12]
            check(on_12 and on_2[-len(on_12):] == on_12, f"ID 2 {on_2[-5:]} against ID 12 {on_12[-5:]}")

            # Close by the client's ID: ID 2 ends, its twin 12 goes on; then the batch's.
            await ws.send(json.dumps({"ID": 2, "Type": "Close"}))
            await messages_until_pong(ws)
            got = await collect(ws, 0.5)
            ids = {m["ID"] for m in got if m["Type"] == "Update"}
            check(ids == {11, 12, 13}, f"after closing ID 2: updates on {sorted(ids)}")
            await ws.send(json.dumps({"ID": [11, 12, 13], "Type": "Close"}))
            await messages_until_pong(ws)
            got = await collect(ws, 0.5)
            check(not got, f"after closing every stream: {got[:2]}")

            # A snapshot answers on its ID and leaves nothing open; an unknown name is closed on its ID.
            await ws.send(json.dumps({"ID": 20, "Key": {"Name": "ITEM000002"}, "Streaming": False}))
            await ws.send(json.dumps({"ID": 21, "Key": {"Name": "NOSUCH"}}))
            got = await collect(ws, 1.0)
            snapshot = [m for m in got if m.get("ID") == 20]
            check(len(snapshot) == 1 and snapshot[0]["Type"] == "Refresh"
                  and snapshot[0]["State"]["Stream"] == "NonStreaming", f"snapshot on ID 20: {snapshot}")
            unknown = [m for m in got if m.get("ID") == 21]
            check(len(unknown) == 1 and unknown[0]["Type"] == "Status"
                  and unknown[0]["State"]["Stream"] == "Closed", f"unknown name on ID 21: {unknown}")
            check(all(m.get("ID") in (20, 21) for m in got), f"other streams: {got[:3]}")
            # The ID is free again once closed: reused for another item.
            await ws.send(json.dumps({"ID": 2, "Key": {"Name": "ITEM000000"}}))
            image = await next_of_type(ws, "Refresh")
            check(image["ID"] == 2 and image["Key"]["Name"] == "ITEM000000", f"reused ID 2: {image}")
            await ws.close()

        asyncio.run(scenario())


def test_qos_time_conflated():
    """A desk grid asks LSEG's way for at most one update per RateInfo ms: each update it
    gets says how many it stands for (ConflationInfo.Count), and the sequence numbers step by
    exactly that count, so nothing is lost from the tally; values are the latest."""
    with Stack("ws-lseg-qos") as stack:
        port = start_served_stack(stack, 600)

        async def scenario():
            ws = await connect(port)
            await lseg_login(ws)
            await ws.send(json.dumps({"ID": 2, "Key": {"Name": "ITEM000001"},
                                      "Qos": {"Timeliness": "Realtime", "Rate": "TimeConflated",
                                              "RateInfo": 200}}))
            got = await collect(ws, 2.0)
            await ws.send(json.dumps({"ID": 3, "Key": {"Name": "ITEM000002"},
                                      "Qos": {"Rate": "JitConflated"}}))
            error = await next_of_type(ws, "Error")
            await ws.close()
            return got, error

        got, error = asyncio.run(scenario())
        refresh = next(m for m in got if m["Type"] == "Refresh")
        updates = [m for m in got if m["Type"] == "Update"]
        check(updates and all(m["ID"] == 2 for m in updates), f"updates {updates[:2]}")
        conflated = [m for m in updates if m.get("Conflated")]
        check(any(m["ConflationInfo"]["Count"] > 1 for m in conflated),
              f"nothing merged at 200 updates/s per item: {updates[:3]}")
        seq = refresh["SeqNumber"]
        for m in updates:
            step = m["ConflationInfo"]["Count"] if m.get("Conflated") else 1
            check(m["SeqNumber"] == seq + step, f"seq {m['SeqNumber']} after {seq}, standing for {step}: {m}")
            seq = m["SeqNumber"]
        for m in conflated:
            check(isinstance(m["ConflationInfo"]["Time"], int) and m["ConflationInfo"]["Time"] >= 0,
                  f"conflation time {m['ConflationInfo']}")
        check("JitConflated" in error["Text"], f"unoffered Qos: {error}")


async def dictionary_refresh(ws, stream, timeout=10, max_bytes=None):
    """The parts of the Dictionary Refresh on `stream`, up to the one that completes it (LSEG's
    multi-part refresh: "Complete": false on all but the last); nothing else may come between.
    Each message is at most `max_bytes` of JSON when that is given."""
    parts = []
    while True:
        text = await asyncio.wait_for(ws.recv(), timeout)
        check(max_bytes is None or len(text.encode()) <= max_bytes,
              f"a part of {len(text.encode())} bytes, over {max_bytes}")
        messages = json.loads(text)
        check(isinstance(messages, list) and len(messages) == 1, f"not an array of one: {text[:200]}")
        for message in messages:
            check(message["ID"] == stream and message["Type"] == "Refresh"
                  and message["Domain"] == "Dictionary", f"not a part of {stream}'s refresh: {message}")
            parts.append(message)
            if message.get("Complete", True):
                return parts


def field_definitions(parts):
    """The Elements of every field a RWFFld refresh defines, by NAME, in order."""
    return {entry["Elements"]["NAME"]: entry["Elements"]
            for part in parts for entry in part["Series"].get("Entries", [])}


def read_dictionary(path):
    """{name: (fid, type)} of an mdcast field dictionary file."""
    fields = {}
    with open(path) as f:
        for line in f:
            words = line.split("#")[0].split()
            if words:
                fields[words[1]] = (int(words[0]), words[2])
    return fields


def test_dictionary_domain():
    """LSEG's Dictionary domain (RWFFld, RWFEnum by Key.Filter), from the API description: every
    field of the server's dictionary with its FID and RWF type, split into parts as LSEG splits a
    large dictionary, reassembled by Complete; a streaming request stays open until closed, a
    snapshot is NonStreaming; an unknown name is refused on its ID; each answer is encoded once."""
    with Stack("ws-lseg-dict") as stack:
        # etc/fields.dict and 800 more fields (about 170 KB of JSON): parts of at most
        # clients.ws_dictionary_part_bytes.
        with open(os.path.join(ETC, "fields.dict")) as f:
            text = f.read()
        text += "".join(f"{fid} EXTRA_{fid} DECIMAL\n" for fid in range(40000, 40800))
        dictionary = stack.write("fields.dict", text)
        stack.distributor()
        port = free_port()
        server = stack.server(1, extra_clients=f"  ws_port: {port}\n  ws_dictionary_file: {dictionary}\n"
                                               "  ws_dictionary_part_bytes: 8192\n")
        wait_for_port(port, server)
        admin = admin_port(server)
        want = read_dictionary(dictionary)

        async def scenario():
            ws = await connect(port)
            await lseg_login(ws)
            await ws.send(json.dumps({"ID": 2, "Domain": "Dictionary",
                                      "Key": {"Name": "RWFFld", "Filter": 7, "Service": "MDCAST"}}))
            fields = await dictionary_refresh(ws, 2, max_bytes=8192)
            await ws.send(json.dumps({"ID": 3, "Domain": "Dictionary", "Streaming": False,
                                      "Key": {"Name": "RWFEnum", "Filter": 7}}))
            enums = await dictionary_refresh(ws, 3)
            await ws.send(json.dumps([{"ID": 4, "Domain": "Dictionary", "Streaming": False,
                                       "Key": {"Name": "RWFFld", "Filter": 3}},
                                      {"ID": 5, "Domain": "Dictionary", "Key": {"Name": "RDMFieldDictionary"}}]))
            minimal = await dictionary_refresh(ws, 4)
            refused = await next_of_type(ws, "Status")
            await ws.send(json.dumps({"ID": 2, "Type": "Close"}))
            after_close = await messages_until_pong(ws)
            again = await connect(port)  # another client asks too: the same answer, not re-encoded
            await lseg_login(again)
            await again.send(json.dumps({"ID": 7, "Domain": "Dictionary", "Key": {"Name": "RWFFld"}}))
            second = await dictionary_refresh(again, 7)
            await again.close()
            await ws.close()
            return fields, enums, minimal, refused, after_close, second

        fields, enums, minimal, refused, after_close, second = asyncio.run(scenario())
        check(len(fields) > 1, f"{len(fields)} part(s): a dictionary of {len(want)} fields not split")
        check(all(p["State"] == {"Stream": "Open", "Data": "Ok", "Text": ""} for p in fields),
              f"streaming state {fields[0]['State']}")
        check(all(p.get("Complete") is False for p in fields[:-1]) and "Complete" not in fields[-1],
              "Complete false on all but the last part")
        summary = fields[0]["Series"]["Summary"]["Elements"]
        check(summary["Type"] == 1 and summary["DictionaryId"] == {"Type": "Int", "Data": 1}
              and isinstance(summary["Version"], str), f"RWFFld summary {summary}")
        defined = field_definitions(fields)
        check({name: (d["FID"]["Data"], d["RWFTYPE"]) for name, d in defined.items()}
              == {name: (fid, {"INT": 3, "DECIMAL": 8, "DOUBLE": 6, "STRING": 18, "TIME": 11}[kind])
                  for name, (fid, kind) in want.items()}, "RWFFld: not every field with its FID and type")
        check(defined["BID"]["FID"] == {"Type": "Int", "Data": 22} and defined["BID"]["LONGNAME"] == "BID"
              and "ENUMLENGTH" in defined["BID"], f"BID {defined['BID']}")

        check(len(enums) == 1 and enums[0]["State"]["Stream"] == "NonStreaming", f"RWFEnum {enums}")
        enum_summary = enums[0]["Series"]["Summary"]["Elements"]
        check(enum_summary["Type"] == 2 and enum_summary["DictionaryId"] == {"Type": "Int", "Data": 1},
              f"RWFEnum summary {enum_summary}")
        check("Entries" not in enums[0]["Series"], "mdcast has no enum tables")

        check(minimal[-1]["Key"] == {"Name": "RWFFld", "Filter": 3}, f"minimal key {minimal[-1]['Key']}")
        check(all("LONGNAME" not in d and "RWFLEN" in d for d in field_definitions(minimal).values()),
              "Minimal verbosity carries no LONGNAME")
        check(refused["ID"] == 5 and refused["Domain"] == "Dictionary"
              and refused["State"]["Stream"] == "Closed" and refused["State"]["Code"] == "NotFound",
              f"unknown dictionary {refused}")
        check(not after_close, f"messages after the close: {after_close}")
        check(field_definitions(second) == defined, "the second client's dictionary differs")
        # RWFFld streaming Normal, RWFEnum snapshot, RWFFld snapshot Minimal: three encodings for
        # five requests (the second client's was encoded already).
        check(metric(admin, "mdcast_server_ws_dictionary_requests_total") == 5, "requests counted")
        check(metric(admin, "mdcast_server_ws_dictionary_encodings_total") == 3, "encoded once each")


if __name__ == "__main__":
    run([test_framing_login_default_service_view_and_ping,
         test_no_default_service_refuses_a_request_without_one,
         test_streams_are_the_clients_ids,
         test_qos_time_conflated,
         test_dictionary_domain])
