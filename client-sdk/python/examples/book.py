#!/usr/bin/env python3
"""A MarketByPrice book from Python: publishes one, follows it with mdcast.Book, prints it.

    python3 book.py --distributors 127.0.0.1:14001 --servers 127.0.0.1:14002
"""
import argparse
import time
from decimal import Decimal

import mdcast


def wait_for_service(consumer, service, timeout=10.0):
    """A new service reaches the servers one backbone directory later: ask until it is up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        consumer.request_directory()
        for event in consumer.read(0.2):
            if event.kind == "directory" and any(s.name == service and s.up for s in event.services):
                return
    raise SystemExit(f"service {service} did not come up within {timeout} s")


def follow(consumer, book, kind):
    """Applies events to the book up to the first of `kind` ('refresh' or 'update');
    prints each entry or action."""
    while True:
        for event in consumer.read(1.0):
            for key, action, fields in event.book_entries:
                print(f"{event.kind:7} {action:6} {key} {fields}")
            book.apply(event)
            if event.kind == kind:
                return


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distributors", default="127.0.0.1:14001")
    parser.add_argument("--servers", default="127.0.0.1:14002")
    args = parser.parse_args()

    with mdcast.Publisher(args.distributors) as publisher, mdcast.Consumer(args.servers) as consumer:
        publisher.wait_connected()
        publisher.add_service("PYBOOKS")
        item = publisher.add_item("PYBOOKS", "VOD.L.MBP")
        # The whole book: {price: fields}, prices as decimal.Decimal (int and float work too);
        # ORDER_SIZE and NO_ORD are RDM fields 3429 and 3430 (etc/fields.dict).
        levels = {Decimal("101.25"): {"ORDER_SIZE": 500, "NO_ORD": 3},
                  Decimal("101.50"): {"ORDER_SIZE": 200, "NO_ORD": 2}}
        publisher.refresh_book(item, "MarketByPrice", {"ACVOL_1": 0}, levels)
        publisher.flush()

        wait_for_service(consumer, "PYBOOKS")
        consumer.subscribe("PYBOOKS", "VOD.L.MBP")
        book = mdcast.Book()
        follow(consumer, book, "refresh")
        # Changes, applied in order: a new level, a size change, a level gone.
        publisher.update_book(item, {"ACVOL_1": 1}, [
            (Decimal("101.75"), "add", {"ORDER_SIZE": 100, "NO_ORD": 1}),
            (Decimal("101.25"), "update", {"ORDER_SIZE": 700}),
            (Decimal("101.50"), "delete")])
        follow(consumer, book, "update")

    print(f"{book.domain}, {len(book)} levels, best offer {next(iter(book))[0]}")
    for price, fields in book:  # prices ascending
        print(f"{price:>8} {fields['ORDER_SIZE']:>5} x {fields['NO_ORD']}")
    print(book.find(101.25), book.to_dict() == {
        Decimal("101.25"): {"ORDER_SIZE": 700, "NO_ORD": 3},
        Decimal("101.75"): {"ORDER_SIZE": 100, "NO_ORD": 1}})


if __name__ == "__main__":
    main()
