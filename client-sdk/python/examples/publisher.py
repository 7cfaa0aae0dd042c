#!/usr/bin/env python3
"""Small publisher: a broadcast service with a few quotes that tick, and an
interactive service that answers requests for any item starting with "Q.".

    python3 publisher.py --distributors 127.0.0.1:14001 --rate 10 --duration 30
"""
import argparse
import random
import time

import mdcast


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distributors", default="127.0.0.1:14001", help="host:port,... failover order")
    parser.add_argument("--service", default="PYQUOTES")
    parser.add_argument("--items", default="VOD.L,BARC.L,HSBA.L")
    parser.add_argument("--rate", type=float, default=10, help="updates per second per item")
    parser.add_argument("--duration", type=float, default=0, help="seconds; 0 runs until Ctrl-C")
    parser.add_argument("--user", default="mdcast")
    parser.add_argument("--password-file", help="default: $MDCAST_PASSWORD")
    args = parser.parse_args()

    publisher = None

    def on_item_request(item, service, name):
        # Interactive: answer with an image, or close the stream with a reason.
        if name.startswith("Q."):
            publisher.refresh(item, {"DSPLY_NAME": name, "BID": 1.0, "ASK": 1.01})
        else:
            publisher.status(item, stream="closed", code=mdcast.StatusCode.NOT_FOUND,
                             text=f"{name}: only Q.* items here")

    publisher = mdcast.Publisher(
        args.distributors, user=args.user, password_file=args.password_file,
        on_item_request=on_item_request,
        on_connection=lambda state, server, text: print(f"-- {state} {server} {text}"),
        on_service=lambda name, ok, text: print(f"-- service {name}: {'accepted' if ok else text}"))
    with publisher:
        publisher.add_service(args.service)
        publisher.add_service(args.service + ".ONDEMAND", interactive=True)
        quotes = {}
        for name in args.items.split(","):
            item = publisher.add_item(args.service, name)
            quotes[item] = random.uniform(50, 500)
            publisher.refresh(item, {"DSPLY_NAME": name, "BID": round(quotes[item], 2),
                                     "ASK": round(quotes[item] + 0.05, 2), "CURRENCY": "GBp"})
        end = time.monotonic() + args.duration if args.duration else float("inf")
        sent = 0
        try:
            while time.monotonic() < end:
                for item in quotes:
                    quotes[item] *= 1 + random.gauss(0, 0.0005)
                    bid = round(quotes[item], 2)
                    if publisher.update(item, {"BID": bid, "ASK": round(bid + 0.05, 2),
                                               "BIDSIZE": random.randint(1, 50) * 100}):
                        sent += 1
                time.sleep(1 / args.rate)
        except KeyboardInterrupt:
            pass
        publisher.flush(2.0)
    print(f"{sent} updates published; {publisher.stats()}")


if __name__ == "__main__":
    main()
