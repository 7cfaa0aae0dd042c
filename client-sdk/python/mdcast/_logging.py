"""libmdcast's log lines go to Python's `logging`, logger "mdcast".

The SDK logs on its I/O threads; the lines wait in a bounded queue in the
extension (never Python code on those threads: see src/log_queue.h) and a
daemon thread, "mdcast-log", hands them to the logger with their level mapped:
trace -> TRACE (5), debug -> DEBUG, info -> INFO, warn -> WARNING,
error -> ERROR. The SDK's own threshold (``log_level=``, default "warn")
still decides which lines are made at all."""
from __future__ import annotations

import logging
import threading

from . import _mdcast

TRACE = 5
LEVELS = {"trace": TRACE, "debug": logging.DEBUG, "info": logging.INFO,
          "warn": logging.WARNING, "error": logging.ERROR}

log = logging.getLogger("mdcast")
_started = threading.Lock()
_thread = None


def route_to_logging() -> None:
    """Starts the routing once per process (the package does it on import)."""
    global _thread
    with _started:
        if _thread is not None:
            return
        _mdcast.route_log_to_queue()
        _thread = threading.Thread(target=_forward, name="mdcast-log", daemon=True)
        _thread.start()


def _forward() -> None:
    while True:
        for level, line in _mdcast.take_log_lines(1.0):
            log.log(LEVELS.get(level, logging.ERROR), "%s", line)
        dropped = _mdcast.take_log_dropped()
        if dropped:
            log.warning("mdcast: %d SDK log lines dropped (the queue to Python was full)",
                        dropped)
