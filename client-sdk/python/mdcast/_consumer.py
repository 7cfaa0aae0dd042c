"""mdcast.Consumer: subscribe to items on mdcast servers, with failover."""
from __future__ import annotations

import asyncio
import collections
import logging
import threading
import weakref
from typing import Any, AsyncIterator, Callable, Iterable, Iterator, List, Optional, Sequence, Union

from . import _lifecycle, _mdcast
from ._errors import ConsumerStopped, LoginRefused, NotConnected
from ._options import Tls, apply_connection_options, load_dictionary, server_list

log = logging.getLogger("mdcast")

Callback = Callable[[_mdcast.Event], Any]
View = Optional[Sequence[Union[str, int]]]


class Consumer:
    """Subscribes to items on mdcast servers and hands their events to Python.

    The SDK's I/O thread (C++) reads from the server, checks sequences and fails
    over; it copies each event into a bounded queue and never runs Python. The
    application takes events in one of three ways:

    * ``for event in consumer.events(timeout=1.0)`` - an iterator that ends
      when nothing arrives for ``timeout`` seconds (or the consumer stops);
    * callbacks (``on_update=...`` etc.), run on a thread of the consumer's
      (or on yours, with ``callback_thread=False`` and :meth:`dispatch`);
    * ``async for event in consumer`` in asyncio, woken by an eventfd the
      event loop watches (no thread).

    :meth:`read` and :meth:`batches` hand over everything waiting at once as a
    :class:`Batch`: the fast path (``batch.values("BID")``).

    When the queue holds ``max_queued_events`` the I/O thread stops reading
    until Python catches up, so the server sees the back-pressure.

    ``busy_poll`` (seconds, default 0: off) is the I/O thread's idle strategy
    for a core of its own: after every frame from the server it polls without
    sleeping for that long, so the next update is read without a kernel
    wake-up, for a core kept busy while traffic flows (ConsumerOptions::
    busy_poll_us, docs/sdk.md).

    A callback that raises ``SystemExit`` or ``KeyboardInterrupt`` stops the
    consumer: no later callback runs, the exception is kept in
    :attr:`callback_exit` and :meth:`stop` (so also leaving a ``with`` block)
    raises it, once. A consumer still running when the program ends is
    stopped at interpreter exit.
    """

    def __init__(self, servers: Union[str, Iterable[str]], *, user: str = "mdcast",
                 password: Optional[str] = None, password_file: Optional[str] = None,
                 application_id: str = "mdcast-python", tls: Optional[Tls] = None,
                 heartbeat_interval: float = 1.0, heartbeat_timeout: float = 3.0,
                 connect_timeout: float = 2.0, login_timeout: float = 3.0,
                 reconnect_delay_min: float = 0.1, reconnect_delay_max: float = 5.0,
                 catch_up_timeout: float = 2.0, dictionary: Any = None,
                 max_queued_events: int = 65536, log_level: str = "warn", busy_poll: float = 0.0,
                 on_event: Optional[Callback] = None, on_refresh: Optional[Callback] = None,
                 on_update: Optional[Callback] = None, on_status: Optional[Callback] = None,
                 on_connection: Optional[Callback] = None,
                 on_directory: Optional[Callback] = None,
                 on_error: Optional[Callable[[BaseException, _mdcast.Event], Any]] = None,
                 callback_thread: bool = True):
        options = _mdcast.ConsumerOptions()
        options.servers = server_list(servers)
        apply_connection_options(
            options, user=user, password=password, password_file=password_file,
            application_id=application_id, tls=tls, heartbeat_interval=heartbeat_interval,
            heartbeat_timeout=heartbeat_timeout, connect_timeout=connect_timeout,
            login_timeout=login_timeout, reconnect_delay_min=reconnect_delay_min,
            reconnect_delay_max=reconnect_delay_max, log_level=log_level)
        options.catch_up_timeout_ms = max(1, round(catch_up_timeout * 1000))
        if not 0 <= busy_poll <= 1:
            raise ValueError("busy_poll must be between 0 and 1 second")
        options.busy_poll_us = round(busy_poll * 1e6)
        options.dictionary = load_dictionary(dictionary)
        if max_queued_events < 1:
            raise ValueError("max_queued_events must be at least 1")
        self.dictionary = options.dictionary
        self._core = _mdcast.ConsumerCore(options, max_queued_events)
        self._handlers = {"refresh": on_refresh, "update": on_update, "status": on_status,
                          "connection": on_connection, "directory": on_directory}
        self._on_event = on_event
        self._on_error = on_error
        self._has_callbacks = on_event is not None or any(self._handlers.values())
        self._callback_thread = callback_thread
        self._thread: Optional[threading.Thread] = None
        self.callback_errors = 0
        #: The SystemExit or KeyboardInterrupt a callback raised (None: none); it stopped the consumer.
        self.callback_exit: Optional[BaseException] = None
        self._exit_raised = False

    # ---- life cycle ----------------------------------------------------------------------

    def start(self) -> "Consumer":
        """Starts the I/O thread (and the callback thread, if there are callbacks)."""
        self._core.start()
        _lifecycle.track(self)
        # Dropped without stop(): the core is stopped (the connection closed) when this
        # Consumer is freed. The callback thread holds only a weak reference to it, so
        # a running thread does not keep a dropped Consumer alive.
        finalizer = weakref.finalize(self, self._core.stop)
        finalizer.atexit = False  # at exit, _lifecycle stops it (with a bounded join)
        if self._has_callbacks and self._callback_thread:
            self._thread = threading.Thread(target=_run_callbacks,
                                            args=(self._core, weakref.ref(self)),
                                            name="mdcast-callbacks", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Closes the connection and joins the threads. Events still waiting can
        be read afterwards; nothing more comes. Idempotent. Raises, once, the
        SystemExit or KeyboardInterrupt a callback raised (:attr:`callback_exit`)."""
        self._stop()
        self._raise_callback_exit()

    def _stop(self, join_timeout: Optional[float] = None) -> None:
        _lifecycle.untrack(self)
        self._core.stop()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(join_timeout)

    def _stop_at_exit(self) -> None:
        # A callback that never returns must not hold the interpreter's exit for ever.
        self._stop(join_timeout=5.0)

    def _raise_callback_exit(self) -> None:
        if self.callback_exit is not None and not self._exit_raised:
            self._exit_raised = True
            raise self.callback_exit

    def __enter__(self) -> "Consumer":
        return self.start()

    def __exit__(self, kind: Any, value: Any, trace: Any) -> None:
        self._stop()
        if kind is None:  # never hide the exception the block itself raised
            self._raise_callback_exit()

    def wait_connected(self, timeout: float = 5.0) -> str:
        """Waits until logged in to a server; returns its "host:port".

        Raises LoginRefused (the server's reason in ``.text``) as soon as a
        login is refused, NotConnected when no server answered in time
        (e.g. all down), ConsumerStopped after stop(). Events keep flowing."""
        state, server, text = self._core.wait_connected(timeout)
        if state == "up":
            return server
        if state == "stopped":
            raise ConsumerStopped("the consumer was stopped")
        if "login_refused" in text:
            raise LoginRefused(f"login to {server} refused: {text}", text)
        raise NotConnected(f"not connected within {timeout} s (last: {server}: "
                           f"{text or 'no answer yet'})", text)

    # ---- requests (safe from any thread, also from callbacks) ------------------------------

    def subscribe(self, service: str, item: str, view: View = None, conflate_ms: int = 0) -> int:
        """Streaming: a refresh, then every update in order, plus statuses.
        ``view``: field names (or ids) to receive; None for all.
        ``conflate_ms``: at most one update every that many milliseconds, the
        updates in between merged into it (``event.conflated``); statuses are
        not delayed; 0 (default) for every update, at most 60000. Returns the
        handle events carry. ValueError for an empty name, an unknown view
        field, a conflate_ms above the limit or an item already streamed."""
        return self._core.subscribe(service, item, view, conflate_ms)

    def subscribe_batch(self, service: str, items: Sequence[str], view: View = None,
                        conflate_ms: int = 0) -> List[int]:
        """Many items in one request; one handle per item, in order."""
        return self._core.subscribe_batch(service, list(items), view, conflate_ms)

    def snapshot(self, service: str, item: str, view: View = None) -> int:
        """One refresh (``event.snapshot`` is True), then the handle is finished."""
        return self._core.snapshot(service, item, view)

    def snapshot_batch(self, service: str, items: Sequence[str], view: View = None) -> List[int]:
        return self._core.snapshot_batch(service, list(items), view)

    def unsubscribe(self, handle: int) -> None:
        """No event for ``handle`` is handed over after this returns."""
        self._core.unsubscribe(handle)

    def request_directory(self) -> None:
        """The answer arrives as a 'directory' event (``event.services``)."""
        self._core.request_directory()

    # ---- receiving -----------------------------------------------------------------------

    def read(self, timeout: float = 1.0) -> _mdcast.Batch:
        """Everything waiting, after waiting up to ``timeout`` s for the first
        event (GIL released meanwhile). The batch is empty on timeout."""
        return self._core.take(timeout)

    def batches(self, timeout: float = 1.0) -> Iterator[_mdcast.Batch]:
        """Batches until none arrives within ``timeout`` or the consumer stops."""
        while True:
            batch = self._core.take(timeout)
            if not len(batch):
                return
            yield batch

    def events(self, timeout: float = 1.0) -> Iterator[_mdcast.Event]:
        """Events until none arrives within ``timeout`` or the consumer stops."""
        take = self._core.take
        while True:
            batch = take(timeout)
            if not len(batch):
                return
            yield from batch

    def __aiter__(self) -> AsyncIterator[_mdcast.Event]:
        """``async for event in consumer``: ends when the consumer stops."""
        return _AsyncEvents(self._core)

    def dispatch(self, timeout: float = 1.0) -> int:
        """Runs the callbacks for what is waiting on the calling thread (for
        ``callback_thread=False``); returns how many events were handled. A
        callback's SystemExit or KeyboardInterrupt stops the consumer and is
        raised from here at once."""
        batch = self._core.take(timeout)
        try:
            self._dispatch_batch(batch)
        except BaseException:
            self._exit_raised = True  # raised here, on the application's thread: not again by stop()
            raise
        return len(batch)

    def stats(self) -> dict:
        """The SDK's counters plus the queue's: waiting, full_waits, callback_errors."""
        s = self._core.stats()
        s["waiting"] = self._core.waiting
        s["full_waits"] = self._core.full_waits
        s["callback_errors"] = self.callback_errors
        return s

    # ---- callbacks -----------------------------------------------------------------------

    def _dispatch_batch(self, batch: _mdcast.Batch) -> None:
        for event in batch:
            handler = self._handlers.get(event.kind) or self._on_event
            if handler is None:
                continue
            try:
                handler(event)
            except Exception as error:  # noqa: BLE001 - reported, the stream goes on
                self._report(error, event)
            except BaseException as request:  # SystemExit, KeyboardInterrupt: the consumer stops
                self._stop_for_callback(request, event)
                raise

    def _stop_for_callback(self, request: BaseException, event: _mdcast.Event) -> None:
        self.callback_exit = request
        log.error("mdcast: a callback raised %s%s for %r: the consumer stops; stop() raises it",
                  type(request).__name__, f"({request})" if str(request) else "", event)
        _lifecycle.untrack(self)
        self._core.stop()

    def _report(self, error: BaseException, event: _mdcast.Event) -> None:
        self.callback_errors += 1
        if self._on_error is not None:
            try:
                self._on_error(error, event)
                return
            except Exception:  # noqa: BLE001
                log.exception("mdcast: on_error raised while reporting another error")
        log.error("mdcast: a callback raised for %r", event, exc_info=error)


def _run_callbacks(core: _mdcast.ConsumerCore, consumer: "weakref.ref[Consumer]") -> None:
    """The callback thread: takes batches and dispatches them while the consumer lives."""
    while True:
        batch = core.take(1.0)
        if not len(batch) and core.closed:
            return
        if not _dispatch_to(consumer, batch):
            return


def _dispatch_to(consumer: "weakref.ref[Consumer]", batch: _mdcast.Batch) -> bool:
    """False when the thread must end: the consumer is gone or a callback stopped it.
    The strong reference lives only for this call, never while the thread waits."""
    target = consumer()
    if target is None:
        return False
    try:
        target._dispatch_batch(batch)
    except BaseException:  # noqa: BLE001 - kept in callback_exit; the consumer stopped
        return False
    return True


class _AsyncEvents:
    """The asyncio side: drains the queue when its eventfd is readable."""

    def __init__(self, core: _mdcast.ConsumerCore):
        self._core = core
        self._pending: collections.deque = collections.deque()

    def __aiter__(self) -> "_AsyncEvents":
        return self

    async def __anext__(self) -> _mdcast.Event:
        while not self._pending:
            batch = self._core.take(0)
            if len(batch):
                self._pending.extend(batch)
                break
            if self._core.closed:
                raise StopAsyncIteration
            await self._readable()
        return self._pending.popleft()

    async def _readable(self) -> None:
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        fd = self._core.fileno()
        loop.add_reader(fd, lambda: ready.done() or ready.set_result(None))
        try:
            await ready
        finally:
            loop.remove_reader(fd)
