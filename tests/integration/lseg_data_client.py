"""Run inside a throw-away venv holding LSEG's own `lseg-data` library (test_lseg_data.py):
the library, unmodified, opens a deployed-platform session on an mdcast server's WebSocket
port, streams prices, takes a snapshot and loads the field dictionary (the Dictionary domain, as
the library does before a validated contribution). Prints one JSON line per finding; exits non-zero
with the reason when a step does not complete.

usage: lseg_data_client.py HOST:PORT SERVICE ITEM [ITEM ...]"""
import json
import sys
import threading
import time

import lseg.data as ld
from lseg.data.content import pricing
from lseg.data.delivery._dictionary import Dictionary


def say(**what):
    print(json.dumps(what, default=str), flush=True)


def describe(field):
    """What the library made of a field's definition (None: not defined)."""
    if field is None:
        return None
    return {"fid": field.fid, "type": field.type.name, "rwf_type": field.rwf_type.name, "long_name": field.long_name}


def main():
    host, service, items = sys.argv[1], sys.argv[2], sys.argv[3:]
    # The app key is for LSEG's cloud; a deployed platform ignores it, but the library wants one.
    session = ld.session.platform.Definition(
        app_key="mdcast-test", deployed_platform_host=host, deployed_platform_username="lseg-data-test",
        dacs_position="127.0.0.1", dacs_application_id="256").get_session()
    session.open()
    say(step="session", state=str(session.open_state))
    if "Opened" not in str(session.open_state):
        return 2

    refreshes, updates, statuses = {}, {}, []
    complete = threading.Event()
    stream = pricing.Definition(universe=items, fields=["BID", "ASK"], service=service).get_stream(session)
    stream.on_refresh(lambda message, name, _: refreshes.setdefault(name, message))
    stream.on_update(lambda message, name, _: updates.setdefault(name, []).append(message))
    stream.on_status(lambda message, name, _: statuses.append((name, message)))
    stream.on_complete(lambda _: complete.set())
    stream.open()
    complete.wait(15)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not all(len(updates.get(i, [])) >= 3 for i in items):
        time.sleep(0.1)
    say(step="stream", complete=complete.is_set(), refreshes=sorted(refreshes),
        updates={i: len(updates.get(i, [])) for i in items}, statuses=statuses[:5])
    prices = stream.get_snapshot()
    say(step="stream_values", values=prices.to_dict(orient="records"))
    stream.close()

    snapshot = pricing.Definition(universe=items, fields=["BID", "ASK"], service=service).get_stream(session)
    snapshot.open(with_updates=False)
    frame = snapshot.get_snapshot()
    say(step="snapshot", values=frame.to_dict(orient="records"))
    snapshot.close()

    # RWFFld then RWFEnum, each a non-streaming request at verbosity 7, parsed by the library.
    dictionary = Dictionary(session=session)
    dictionary.load()
    say(step="dictionary", versions={getattr(k, "value", k): v for k, v in dictionary.versions.items()},
        fields={name: describe(dictionary.get_field(name)) for name in ("BID", "BIDSIZE", "DSPLY_NAME")})
    session.close()
    say(step="closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
