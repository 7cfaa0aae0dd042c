"""One image of some items as plain Python values: mdcast.snapshot_values() gives a dict,
mdcast.snapshot_frame() a pandas DataFrame (when pandas is installed)."""
from __future__ import annotations

import time
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from ._consumer import Consumer, View

Values = Dict[Union[str, int], Any]


def snapshot_values(servers: Union[str, Iterable[str]], service: str, items: Union[str, Sequence[str]],
                    view: View = None, *, timeout: float = 5.0,
                    **options: Any) -> Dict[str, Optional[Values]]:
    """One image of each item, as ``{item: {field: value}}`` in the order asked.

    Connects (``servers`` and ``options`` as for :class:`Consumer`: ``user``,
    ``password``, ``tls`` ...), asks for a snapshot of every item in one request,
    and closes again. ``view``: the fields wanted (names or ids); None for all.
    An item that has no image — unknown, not entitled, closed, or not answered
    within ``timeout`` seconds (for the whole call) — maps to None. An image
    that is not current (its source is down) is returned as it is; use
    :meth:`Consumer.snapshot_batch` to see each item's state. Raises
    :class:`LoginRefused` or :class:`NotConnected` when no server takes the
    login within ``timeout``."""
    names = [items] if isinstance(items, str) else list(dict.fromkeys(items))
    result: Dict[str, Optional[Values]] = {name: None for name in names}
    if not names:
        return result
    deadline = time.monotonic() + timeout
    with Consumer(servers, **options) as consumer:
        consumer.wait_connected(timeout)
        waiting = dict(zip(consumer.snapshot_batch(service, names, view), names))
        while waiting and time.monotonic() < deadline:
            for event in consumer.read(min(0.5, max(0.0, deadline - time.monotonic()))):
                name = waiting.get(event.handle)
                if name is None:
                    continue
                if event.kind == "refresh":
                    result[name] = event.fields
                    del waiting[event.handle]
                elif event.kind == "status" and event.stream_state == "closed":
                    del waiting[event.handle]  # refused: no image will come
    return result


def snapshot_frame(servers: Union[str, Iterable[str]], service: str, items: Union[str, Sequence[str]],
                   view: View = None, *, timeout: float = 5.0, **options: Any) -> Any:
    """:func:`snapshot_values` as a pandas DataFrame: one row per item (index
    ``item``, in the order asked), one column per field (the view's order when
    given by names); NaN where an item has no value, a row of NaN for an item
    without an image. ImportError naming the package when pandas is missing."""
    try:
        import pandas
    except ImportError as error:
        raise ImportError("mdcast.snapshot_frame needs pandas (pip install pandas, or "
                          "apt install python3-pandas); snapshot_values gives the same as a dict") from error
    values = snapshot_values(servers, service, items, view, timeout=timeout, **options)
    frame = pandas.DataFrame([row or {} for row in values.values()], index=list(values),
                             columns=_columns(values, view))
    frame.index.name = "item"
    return frame


def _columns(values: Dict[str, Optional[Values]], view: View) -> List[Union[str, int]]:
    """The view's names in its order, then any other field in the order first seen."""
    columns: Dict[Union[str, int], None] = dict.fromkeys(f for f in (view or []) if isinstance(f, str))
    for row in values.values():
        columns.update(dict.fromkeys(row or {}))
    return list(columns)
