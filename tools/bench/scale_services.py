#!/usr/bin/env python3
"""mdcast-bench scale, the services step: one libmdcast Publisher (the Python package) announces
--services broadcast services with --items items each to a distributor, and one Consumer asks a
server for its directory until it lists them all or --timeout passes. Prints one JSON line:
services accepted and refused by the distributor (with the refusal texts), services in the
server's directory, and the seconds each took."""
import argparse
import json
import threading
import time

import mdcast


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--distributor", required=True, help="HOST:PORT")
    parser.add_argument("--server", required=True, help="HOST:PORT")
    parser.add_argument("--services", type=int, required=True)
    parser.add_argument("--items", type=int, default=1, help="items per service")
    parser.add_argument("--timeout", type=float, default=60)
    return parser.parse_args()


class Answers:
    """The distributor's answers to the announcements and the server's last directory."""

    def __init__(self):
        self.lock = threading.Lock()
        self.accepted, self.refused = set(), {}
        self.directory = 0
        self.directory_seen = threading.Event()

    def on_service(self, name, ok, text):
        with self.lock:
            if ok:
                self.accepted.add(name)
            else:
                self.refused[name] = text

    def on_directory(self, event):
        self.directory = len(event.services)
        self.directory_seen.set()

    def answered(self):
        with self.lock:
            return len(self.accepted) + len(self.refused)


def announce(publisher, args, answers, deadline):
    names = [f"SCALE{s:05d}" for s in range(args.services)]
    for name in names:
        publisher.add_service(name)
        for i in range(args.items):
            publisher.refresh(publisher.add_item(name, f"S{i:06d}"), {"BID": 1.0, "ASK": 1.01})
    while answers.answered() < len(names) and time.monotonic() < deadline:
        time.sleep(0.05)


def count_directory(consumer, want, answers, deadline, stall_s=10.0):
    """Asks again every half second: the directory grows as the backbone announces services.
    Gives up when it has not grown for `stall_s`."""
    best, grown = -1, time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - grown < stall_s:
        answers.directory_seen.clear()
        consumer.request_directory()
        answers.directory_seen.wait(timeout=max(0.0, min(2.0, deadline - time.monotonic())))
        if answers.directory >= want:
            return
        if answers.directory > best:
            best, grown = answers.directory, time.monotonic()
        time.sleep(0.5)


def main():
    args = parse_args()
    answers = Answers()
    start = time.monotonic()
    deadline = start + args.timeout
    result = {"type": "services", "services": args.services}
    with mdcast.Publisher(args.distributor, on_service=answers.on_service) as publisher:
        publisher.wait_connected(timeout=10)
        announce(publisher, args, answers, deadline)
        result["announce_s"] = round(time.monotonic() - start, 3)
        with mdcast.Consumer(args.server, on_directory=answers.on_directory) as consumer:
            consumer.wait_connected(timeout=10)
            count_directory(consumer, len(answers.accepted), answers, deadline)
        result["directory_s"] = round(time.monotonic() - start, 3)
    with answers.lock:
        result.update({"accepted": len(answers.accepted), "refused": len(answers.refused),
                       "refusals": sorted(set(answers.refused.values()))[:5],
                       "refused_names": sorted(answers.refused),
                       "directory": answers.directory})
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
