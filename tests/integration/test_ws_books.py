"""Books on the WebSocket/JSON port (docs/websocket.md, "Books"): an SDK publisher
(sdk-book-probe) refreshes a MarketByPrice book of 1,000 levels and publishes a
stream of adds, size updates and deletes through the real distributor and server.
A WebSocket client subscribed (Domain MarketByPrice) from the start and one joining
half way each rebuild the book from the LSEG-shaped Map of the Refresh and of every
Update, and end with exactly the publisher's book, entry by entry; a third, with a View
of the number of orders (and the summary's update number), ends with that book restricted
to the view: no size anywhere, every level there."""
import asyncio
import json
import os
import sys
from decimal import Decimal

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import check, free_port, wait_for_port  # noqa: E402
from test_books import BOOK_BIN, stop, wait_for  # noqa: E402
from ws_client import connect, login, receive, ws_section  # noqa: E402

ITEM, LEVELS, UPDATES = "VOD.MBP", 1000, 3000
SIZE, ORDERS, NUMBER = "3427", "NO_ORD", "ACVOL_1"  # 3427 is not in etc/fields.dict: by id


def apply_map(book, map_):
    for entry in map_["Entries"]:
        key = Decimal(str(entry["Key"]))
        if entry["Action"] == "Delete":
            check("Fields" not in entry, f"a Delete with Fields: {entry}")
            book.pop(key, None)
        elif entry["Action"] == "Add":
            book[key] = dict(entry["Fields"])
        else:
            check(entry["Action"] == "Update", f"unknown action: {entry}")
            book.setdefault(key, {}).update(entry["Fields"])


class WsBook:
    """One WebSocket subscriber's book, rebuilt from its Refresh and Updates."""

    def __init__(self, name, view=None):
        self.name, self.book, self.number, self.seq, self.view = name, {}, None, None, view

    async def subscribe(self, port):
        self.ws = await connect(port)
        check((await login(self.ws))["State"]["Stream"] == "Open", f"{self.name}: login refused")
        request = {"ID": 2, "Domain": "MarketByPrice", "Key": {"Service": "BOOKS", "Name": ITEM}}
        if self.view:
            request["View"] = self.view
        await self.ws.send(json.dumps(request))
        refresh = (await receive(self.ws, 30))[0]
        check(refresh["Type"] == "Refresh" and refresh["Domain"] == "MarketByPrice",
              f"{self.name}: {str(refresh)[:300]}")
        check(refresh["State"]["Data"] == "Ok", f"{self.name}: refresh state {refresh['State']}")
        check(refresh["Map"]["KeyType"] == "Real", f"{self.name}: KeyType {refresh['Map']['KeyType']}")
        check(all(e["Action"] == "Add" for e in refresh["Map"]["Entries"]), f"{self.name}: not all Add")
        apply_map(self.book, refresh["Map"])
        self.number = refresh["Map"]["Summary"]["Fields"].get(NUMBER)
        self.seq = refresh["SeqNumber"]
        return refresh

    async def follow(self):
        """Every Update until the publisher's last (summary field 32 = its number)."""
        while self.number != UPDATES:
            for m in await receive(self.ws, 60):
                if m.get("Type") == "Ping":  # the server pings a client that sends nothing
                    await self.ws.send(json.dumps({"Type": "Pong"}))
                    continue
                check(m["Type"] == "Update" and m["ID"] == 2, f"{self.name}: {str(m)[:300]}")
                check(m["SeqNumber"] == self.seq + 1, f"{self.name}: seq {m['SeqNumber']} after {self.seq}")
                check(m.get("UpdateType") == "Trade", f"{self.name}: a book update not a trade")
                self.seq = m["SeqNumber"]
                apply_map(self.book, m["Map"])
                self.number = m["Map"].get("Summary", {}).get("Fields", {}).get(NUMBER, self.number)
        await self.ws.close()

    def check_same(self, published):
        sized = not self.view  # the view has no size: no entry may carry one
        want = {Decimal(price): (size if sized else -1, orders) for price, size, orders in published}
        got = {key: (f.get(SIZE, -1), f.get(ORDERS, -1)) for key, f in self.book.items()}
        stale = sorted(set(got) - set(want))
        missing = sorted(set(want) - set(got))
        check(not stale, f"{self.name}: {len(stale)} entries the publisher does not have: {stale[:5]}")
        check(not missing, f"{self.name}: {len(missing)} entries missing: {missing[:5]}")
        for key, entry in want.items():
            check(got[key] == entry, f"{self.name}: at {key} {got[key]}, the publisher has {entry}")


async def run(stack, port, publisher, go, half_go):
    early, viewed = WsBook("early"), WsBook("viewed", view=[ORDERS, NUMBER])
    image = await early.subscribe(port)
    check(len(image["Map"]["Entries"]) == LEVELS, f"early: {len(image['Map']['Entries'])} levels")
    viewed_image = await viewed.subscribe(port)
    check(len(viewed_image["Map"]["Entries"]) == LEVELS and
          all(set(e["Fields"]) <= {ORDERS} for e in viewed_image["Map"]["Entries"]),
          f"viewed image: {str(viewed_image['Map']['Entries'][:3])}")
    following = [asyncio.create_task(early.follow()), asyncio.create_task(viewed.follow())]
    open(go, "w").close()
    await asyncio.to_thread(wait_for, publisher, "half")
    late = WsBook("late")
    await late.subscribe(port)
    check(late.number is not None and 0 < late.number <= UPDATES // 2, f"late joined at {late.number}")
    following.append(asyncio.create_task(late.follow()))
    open(half_go, "w").close()
    published = await asyncio.to_thread(wait_for, publisher, "book", 120)
    await asyncio.wait_for(asyncio.gather(*following), 180)
    check(published["entries"], "the publisher's book is empty")
    for client in (early, late, viewed):
        client.check_same(published["entries"])


def test_websocket_subscribers_end_with_the_publishers_book():
    with harness.Stack("wsbooks") as stack:
        stack.distributor()
        port = free_port()
        server = stack.server(1, extra_clients=ws_section(port))
        wait_for_port(port, server)
        go, half_go = stack.write("go", ""), os.path.join(stack.dir, "half-go")
        os.remove(go)
        publisher = stack.start("publisher", [
            BOOK_BIN, "publish", "--distributors", f"127.0.0.1:{stack.publisher_port}",
            "--service", "BOOKS", "--item", ITEM, "--levels", str(LEVELS), "--updates",
            str(UPDATES), "--seed", "11", "--rate", "1500", "--go-file", go,
            "--half-go-file", half_go], stdout=True)
        check(wait_for(publisher, "refreshed")["flushed"], "the book refresh was not flushed")
        asyncio.run(run(stack, port, publisher, go, half_go))
        stop(publisher)


if __name__ == "__main__":
    harness.run([test_websocket_subscribers_end_with_the_publishers_book])
