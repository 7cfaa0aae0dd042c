#!/usr/bin/env python3
"""Watchlist printer: one line per item with its latest BID/ASK, redrawn as updates
come, and a line for every status (suspect, closed, failover).

    python3 watchlist.py --servers 127.0.0.1:14002,127.0.0.1:14003 VOD.L BARC.L

Receives with callbacks; see latency_probe.py for the iterator and asyncio.
"""
import argparse
import threading

import mdcast


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("items", nargs="+")
    parser.add_argument("--servers", default="127.0.0.1:14002", help="host:port,... in failover order")
    parser.add_argument("--service", default="MDCAST")
    parser.add_argument("--user", default="mdcast")
    parser.add_argument("--password-file", help="default: $MDCAST_PASSWORD")
    parser.add_argument("--duration", type=float, default=0, help="seconds; 0 runs until Ctrl-C")
    args = parser.parse_args()

    quotes = {}
    lock = threading.Lock()

    def on_data(event):
        with lock:
            quote = quotes.setdefault(event.item, {})
            quote.update({k: v for k, v in event.fields.items() if k in ("BID", "ASK")})
            print(f"{event.item:<12} {quote.get('BID', ''):>10} {quote.get('ASK', ''):>10}"
                  f"  seq {event.sequence}{'  (image)' if event.kind == 'refresh' else ''}")

    def on_status(event):
        print(f"{event.item:<12} {event.stream_state}/{event.data_state} "
              f"{event.status_code.name}: {event.status_text}")

    def on_connection(event):
        print(f"-- {event.connection_state} {event.server} {event.status_text}")

    consumer = mdcast.Consumer(args.servers, user=args.user, password_file=args.password_file,
                               on_refresh=on_data, on_update=on_data, on_status=on_status,
                               on_connection=on_connection)
    with consumer:
        consumer.subscribe_batch(args.service, args.items, view=["BID", "ASK"])
        try:
            threading.Event().wait(args.duration or None)
        except KeyboardInterrupt:
            pass
    stats = consumer.stats()
    print(f"{stats['refreshes']} images, {stats['updates']} updates, {stats['statuses']} statuses")


if __name__ == "__main__":
    main()
