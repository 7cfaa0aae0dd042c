"""mdcast.Publisher: publish items to mdcast distributors."""
from __future__ import annotations

import logging
import threading
import weakref
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Tuple, Union

from . import _lifecycle, _mdcast
from ._errors import LoginRefused, NotConnected
from ._options import Tls, apply_connection_options, load_dictionary, server_list

log = logging.getLogger("mdcast")

Fields = Mapping[Union[str, int], Any]


class Publisher:
    """Feeds one or more services to a distributor (failover list), or with
    ``publish_to_all=True`` to every distributor listed at once (dual-homed: each
    gets every refresh, update and status over a link of its own, with the same
    sequences; a link that is lost reconnects and is re-imaged on its own while the
    others go on; ``links()`` says each one's state).

    Fields are dicts by dictionary name (or id): ``{"BID": 101.25, "BIDSIZE": 300}``.
    The dictionary's kind decides the encoding (DECIMAL from float uses its
    shortest decimal form, so 101.25 is sent exactly). refresh/update/status
    copy what they are given and return at once (False: the outbox is full);
    the SDK keeps each item's image and sequence and re-publishes after a
    reconnect. ``takeover_secret``: the distributor's publishers.takeover_secret_file
    secret, so a restarted or standby process takes its services over.
    ``standby_rank`` (1 or more): join a service another publisher publishes at
    the distributor as a standby of that rank (lower is preferred) instead of
    being refused (docs/operations.md, "Redundancy"); 0: none.

    Frame limit: a refresh, update, book or status whose frame could pass the
    distributor's frame limit (its publishers.max_frame_bytes, announced at
    login; 1 MiB before) raises ValueError naming the size and the limit;
    nothing is taken and the item's image is unchanged (``stats()["frames_refused"]``).
    An item whose kept image passes the limit later (grown by updates, a
    distributor with a lower limit) is dropped alone and closed: ``on_item_rejected``
    with code LIMIT_REACHED, ``stats()["images_dropped"]``; it is not sent again
    until a refresh within the limit (docs/sdk.md, "Frame limit").

    Callbacks run on the SDK's I/O thread, one at a time; an exception in one
    is reported (``on_error`` or the "mdcast" logger), never raised there:

    * ``on_connection(state, server, text)``: "connecting", "up", "down", "stopped";
    * ``on_service(name, accepted, text)``: the distributor's answer to an announcement;
    * ``on_item_request(item, service, name)``: interactive services; answer
      with refresh(), or status(item, stream="closed", code=StatusCode.NOT_FOUND);
    * ``on_item_closed(item, service, name)``: nobody wants it any more;
    * ``on_item_rejected(item, code, text)``: the distributor refused a message;
    * ``on_post(item, service, name, user, fields)``: a consumer's post (a
      contribution; ``item`` is the handle when this publisher has the item, else 0).
      Return None or True to accept, False or a str (the reason, sent back to the
      poster) to reject. Accepting publishes nothing: call update() to show the
      change. Without on_post every post is rejected; one that raises rejects it.
    """

    def __init__(self, distributors: Union[str, Iterable[str]], *, user: str = "mdcast",
                 password: Optional[str] = None, password_file: Optional[str] = None,
                 application_id: str = "mdcast-python-publisher", tls: Optional[Tls] = None,
                 heartbeat_interval: float = 1.0, heartbeat_timeout: float = 3.0,
                 connect_timeout: float = 2.0, login_timeout: float = 3.0,
                 reconnect_delay_min: float = 0.1, reconnect_delay_max: float = 5.0,
                 dictionary: Any = None, max_queued_bytes: int = 64 << 20,
                 takeover_secret: str = "", publish_to_all: bool = False, standby_rank: int = 0,
                 log_level: str = "warn",
                 on_connection: Optional[Callable[[str, str, str], Any]] = None,
                 on_service: Optional[Callable[[str, bool, str], Any]] = None,
                 on_item_request: Optional[Callable[[int, str, str], Any]] = None,
                 on_item_closed: Optional[Callable[[int, str, str], Any]] = None,
                 on_item_rejected: Optional[Callable[[int, str, str], Any]] = None,
                 on_post: Optional[Callable[[int, str, str, str, Dict[Any, Any]], Any]] = None,
                 on_error: Optional[Callable[[BaseException, str], Any]] = None):
        options = _mdcast.PublisherOptions()
        options.distributors = server_list(distributors)
        apply_connection_options(
            options, user=user, password=password, password_file=password_file,
            application_id=application_id, tls=tls, heartbeat_interval=heartbeat_interval,
            heartbeat_timeout=heartbeat_timeout, connect_timeout=connect_timeout,
            login_timeout=login_timeout, reconnect_delay_min=reconnect_delay_min,
            reconnect_delay_max=reconnect_delay_max, log_level=log_level)
        options.max_queued_bytes = max_queued_bytes
        options.takeover_secret = takeover_secret
        options.publish_to_all = publish_to_all
        options.standby_rank = standby_rank
        self.dictionary = load_dictionary(dictionary)
        self._callbacks: Dict[str, Optional[Callable]] = {
            "connection": on_connection, "service": on_service, "item_request": on_item_request,
            "item_closed": on_item_closed, "item_rejected": on_item_rejected,
            "post": on_post}
        self._on_error = on_error
        self._state = ("connecting", "", "")
        self._links: Dict[str, Tuple[str, str]] = {}  # per distributor: (state, text)
        self._state_changed = threading.Condition()
        self.callback_errors = 0
        # The core holds its callback for as long as it lives, in C++ where the garbage
        # collector cannot see it: a bound method there would keep this Publisher (and its
        # connection) alive for ever. It holds a weak reference instead, so a dropped
        # Publisher is freed, and its core (which stops and disconnects) with it.
        self._core = _mdcast.PublisherCore(options, self.dictionary, _weak_callback(self))

    def start(self) -> "Publisher":
        self._core.start()
        _lifecycle.track(self)
        return self

    def stop(self) -> None:
        """Sends what is queued (for at most 2 s), closes, joins the I/O thread.
        A publisher still running when the program ends is stopped at interpreter exit."""
        _lifecycle.untrack(self)
        self._core.stop()

    def _stop_at_exit(self) -> None:
        self.stop()

    def __enter__(self) -> "Publisher":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def wait_connected(self, timeout: float = 5.0) -> str:
        """Waits for a login to a distributor (with publish_to_all: to any of them);
        returns its "host:port". Raises LoginRefused or NotConnected with the last
        reason otherwise."""
        with self._state_changed:
            self._state_changed.wait_for(lambda: self._up() is not None, timeout)
            up = self._up()
            state, server, text = self._state
        if up is not None:
            return up
        if "login_refused" in text:
            raise LoginRefused(f"login to {server} refused: {text}", text)
        raise NotConnected(f"not connected within {timeout} s (last: {server}: "
                           f"{text or 'no answer yet'})", text)

    def links(self) -> Dict[str, str]:
        """Each distributor's last connection state ("connecting", "up", "down",
        "stopped") by "host:port": with publish_to_all, one entry per link."""
        with self._state_changed:
            return {server: state for server, (state, _) in self._links.items()}

    def _up(self) -> Optional[str]:
        return next((server for server, (state, _) in self._links.items() if state == "up"), None)

    def add_service(self, name: str, interactive: bool = False) -> None:
        """Announced now and after every reconnect. Interactive services get
        on_item_request for each item a subscriber asks for."""
        self._core.add_service(name, interactive)

    def add_item(self, service: str, item: str) -> int:
        """The item's handle (created on first use; broadcast items are registered)."""
        return self._core.add_item(service, item)

    def refresh(self, item: int, fields: Fields, *, stream: str = "open", data: str = "ok",
                code: _mdcast.StatusCode = _mdcast.StatusCode.NONE, text: str = "") -> bool:
        """The item's full image. False when the outbox is full (nothing taken).
        ValueError (nothing taken) when its frame could pass the distributor's
        frame limit, or a text is not valid UTF-8."""
        return self._core.refresh(item, dict(fields), stream, data, code, text)

    def update(self, item: int, fields: Fields, publish_time_ns: Optional[int] = None) -> bool:
        """Changed fields. ``publish_time_ns`` None stamps now (CLOCK_REALTIME),
        0 sends no stamp. Dropped (and counted) before the item's first refresh.
        ValueError (nothing taken) when its frame could pass the distributor's
        frame limit."""
        return self._core.update(item, dict(fields), publish_time_ns)

    def trade(self, item: int, fields: Fields, publish_time_ns: Optional[int] = None) -> bool:
        """An update marked a trade (as update() otherwise): conflation never merges
        it with others, so every subscriber gets it on its own, in order."""
        return self._core.update(item, dict(fields), publish_time_ns, True)

    def refresh_book(self, item: int, domain: str, summary: Fields, entries: Any, *,
                     stream: str = "open", data: str = "ok",
                     code: _mdcast.StatusCode = _mdcast.StatusCode.NONE, text: str = "") -> bool:
        """A book's whole image (docs/books.md): ``domain`` 'MarketByPrice' (keys are
        prices: decimal.Decimal, int or float), 'MarketByOrder' or 'SymbolList' (keys are
        names: str or bytes); ``summary`` its field-list fields; ``entries`` every entry,
        ``{key: fields}`` or an iterable of ``(key, fields)``. ValueError (nothing sent)
        for another domain, a key of the wrong kind, or a frame that could pass the
        distributor's frame limit (a book too large to publish whole). False when the
        outbox is full."""
        return self._core.refresh_book(item, domain, dict(summary), entries, stream, data,
                                       code, text)

    def update_book(self, item: int, summary: Fields, changes: Any,
                    publish_time_ns: Optional[int] = None) -> bool:
        """A book's changes, applied in order: ``summary`` fields (may be empty) and
        ``changes``, an iterable of ``(key, action, fields)`` (:class:`BookEntry`;
        action 'add', 'update' or 'delete') or ``(key, 'delete')``. Sent as a trade:
        conflation never merges a book's actions. Dropped (and counted) unless the
        item's last refresh was a book's. ValueError (nothing taken) when its frame
        could pass the distributor's frame limit."""
        return self._core.update_book(item, dict(summary), changes, publish_time_ns)

    def status(self, item: int, *, stream: str = "open", data: str = "suspect",
               code: _mdcast.StatusCode = _mdcast.StatusCode.NONE, text: str = "") -> bool:
        """A closed stream ends the item; a suspect one says its data may be stale."""
        return self._core.status(item, stream, data, code, text)

    def flush(self, timeout: float = 2.0) -> bool:
        """Waits until the I/O thread has handed every refresh, update and status
        published so far to the connection (or held it while disconnected).
        With ``publish_to_all``: until every distributor whose link is up has
        acknowledged them. False when that did not happen within ``timeout`` s."""
        return self._core.flush(timeout)

    def stats(self) -> dict:
        s = self._core.stats()
        s["callback_errors"] = self.callback_errors
        return s

    # Called by the C++ bridge on the I/O thread, with the GIL; for "post" it
    # returns the verdict as (accepted, text).
    def _callback(self, name: str, *args: Any) -> Any:
        if name == "post":
            return self._post_verdict(args)
        if name == "connection":
            with self._state_changed:
                state, server, text = args
                self._state = (state, server, text or self._state[2])
                self._links[server] = (state, text)
                self._state_changed.notify_all()
        handler = self._callbacks.get(name)
        if handler is None:
            return
        try:
            handler(*args)
        except Exception as error:  # noqa: BLE001 - reported, the I/O thread goes on
            self._report(error, name, args)
        return None

    def _post_verdict(self, args: tuple) -> tuple:
        handler = self._callbacks.get("post")
        if handler is None:
            return (False, "this publisher takes no posts")
        try:
            verdict = handler(*args)
        except Exception as error:  # noqa: BLE001 - reported, the post rejected
            self._report(error, "post", args)
            return (False, f"the publisher failed to handle the post: {error}")
        if verdict is None or verdict is True:
            return (True, "")
        return (False, verdict if isinstance(verdict, str) else "")

    def _report(self, error: Exception, name: str, args: tuple) -> None:
        self.callback_errors += 1
        if self._on_error is not None:
            try:
                self._on_error(error, name)
                return
            except Exception:  # noqa: BLE001
                log.exception("mdcast: on_error raised while reporting another error")
        log.error("mdcast: publisher callback %s%r raised", name, args, exc_info=error)


def _weak_callback(publisher: Publisher) -> Callable[..., Any]:
    """Calls ``publisher._callback`` while the publisher lives; nothing once it is gone."""
    ref = weakref.ref(publisher)

    def callback(name: str, *args: Any) -> Any:
        target = ref()
        return None if target is None else target._callback(name, *args)

    return callback
