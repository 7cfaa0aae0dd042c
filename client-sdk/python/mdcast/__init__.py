"""mdcast: market data from mdcast servers in Python.

The package binds libmdcast, the C++ SDK, so failover, sequence checking,
TLS, login and views behave exactly as in C++. A first consumer::

    import mdcast

    with mdcast.Consumer("127.0.0.1:14002,127.0.0.1:14003") as consumer:
        consumer.subscribe_batch("MDCAST", ["ITEM000001", "ITEM000002"], view=["BID", "ASK"])
        for event in consumer.events(timeout=5.0):
            if event.kind in ("refresh", "update"):
                print(event.item, event.sequence, event["BID"], event.get("ASK"))
            elif event.kind == "status":
                print(event.item, event.stream_state, event.data_state, event.status_text)

One image of some items as a dict (or a pandas DataFrame: snapshot_frame)::

    mdcast.snapshot_values("127.0.0.1:14002", "MDCAST", ["ITEM000001"], view=["BID", "ASK"])
    # {'ITEM000001': {'BID': 100.01, 'ASK': 100.06}}

See docs/python.md for callbacks, asyncio, batches and the publisher.
"""
from ._mdcast import Batch, Dictionary, Event, Service, StatusCode, realtime_now_ns
from ._mdcast import _set_sched_slice
from ._book import Book, BookEntry
from ._consumer import Consumer
from ._errors import ConsumerStopped, LoginRefused, MdcastError, NotConnected
from ._options import Tls
from ._post import PostFuture, PostResult
from ._publisher import Publisher
from ._snapshot import snapshot_frame, snapshot_values
from ._logging import route_to_logging as _route_to_logging

__all__ = [
    "Batch", "Book", "BookEntry", "Consumer", "ConsumerStopped", "Dictionary", "Event", "LoginRefused",
    "MdcastError", "NotConnected", "PostFuture", "PostResult", "Publisher", "Service",
    "StatusCode", "Tls", "realtime_now_ns", "set_sched_slice", "snapshot_frame", "snapshot_values",
]
__version__ = "0.1.0"

_route_to_logging()  # SDK log lines to logging.getLogger("mdcast") (docs/python.md)


def set_sched_slice(slice_us: int) -> None:
    """A shorter scheduler slice (Linux 6.12+) for the calling thread and the threads it
    starts afterwards, such as the I/O threads of Consumers and Publishers created later:
    call it first. 100..100000 µs; 0: the kernel's default. Raises MdcastError with the
    reason when it is out of range or the kernel refuses or ignores it (docs/sdk.md)."""
    if not isinstance(slice_us, int) or slice_us < 0:
        raise MdcastError(f"slice_us must be a non-negative int, not {slice_us!r}")
    why = _set_sched_slice(min(slice_us, 2**32 - 1))
    if why:
        raise MdcastError(why)
