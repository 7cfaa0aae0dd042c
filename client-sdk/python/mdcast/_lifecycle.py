"""Stops every running Consumer and Publisher when the interpreter exits.

The SDK's I/O threads are C++ threads and the consumer's callback thread is a daemon thread:
left running, they meet an interpreter that is finalizing (a daemon thread taking the GIL back
then is ended by CPython). The interpreter runs atexit handlers after the program's last line,
sys.exit() or an uncaught exception, but before it begins finalizing: stopping everything still
running there lets each thread end normally (docs/python.md, "Ending a program")."""
from __future__ import annotations

import atexit
import logging
import weakref
from typing import Any

log = logging.getLogger("mdcast")

_running: "weakref.WeakSet[Any]" = weakref.WeakSet()


def track(client: Any) -> None:
    """`client` (a started Consumer or Publisher) is stopped at exit unless stopped before."""
    _running.add(client)


def untrack(client: Any) -> None:
    _running.discard(client)


def _stop_all() -> None:
    for client in list(_running):
        try:
            client._stop_at_exit()
        except Exception:  # noqa: BLE001 - the others must still be stopped
            log.exception("mdcast: stopping %r at interpreter exit failed", client)


atexit.register(_stop_all)
