"""Books (docs/books.md) in Python: mdcast.BookEntry, one entry of a book refresh or one
action of a book update, and mdcast.Book, a book kept current from a subscription's events
(as the C++ mdcast::Book: same rules, same key order)."""
from __future__ import annotations

from decimal import Decimal
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Tuple, Union

Key = Union[Decimal, str, bytes]  # a price, or a name (bytes when not UTF-8)
Fields = Dict[Union[str, int], Any]


class BookEntry(NamedTuple):
    """One entry of a book refresh (action 'add') or one action of a book update:
    'add' (new, or the whole entry replaced), 'update' (fields merged in, added when
    absent) or 'delete' (removed; fields empty). Publisher.update_book takes these."""
    key: Key
    action: str
    fields: Fields


def _order(key: Key) -> Tuple[int, Any]:
    """mdcast::BookKey's order: prices by value, before names; names bytewise."""
    if isinstance(key, Decimal):
        return (0, key)
    return (1, key.encode() if isinstance(key, str) else key)


class Book:
    """A book kept current from a subscription's events: :meth:`apply` each one.

    A refresh replaces it (domain, summary fields, entries); an update merges its
    summary fields and applies its actions in order (an update of an absent key adds
    it, a delete of an absent key does nothing). Iterating gives ``(key, fields)`` in
    key order: prices ascending by value (bids: ``reversed(book)``), then names."""

    def __init__(self) -> None:
        self.domain = "MarketPrice"
        self.summary: Fields = {}
        self._entries: Dict[Key, Fields] = {}
        self._sorted: Optional[List[Key]] = None  # the keys in order, until the next add or delete

    def apply(self, event: Any) -> bool:
        """False (nothing changed) for an event that is not a refresh or an update;
        a field-list update merges into the summary and returns True."""
        if event.kind == "refresh":
            self.clear()
            self.domain = event.domain
            self.summary = event.fields
        elif event.kind == "update":
            self.summary.update(event.fields)
        else:
            return False
        for key, action, fields in event.book_entries:
            self._apply_entry(key, action, fields)
        return True

    def _apply_entry(self, key: Key, action: str, fields: Fields) -> None:
        if action == "delete":
            if self._entries.pop(key, None) is not None:
                self._sorted = None
            return
        entry = self._entries.get(key)
        if entry is None:
            self._entries[key] = dict(fields)
            self._sorted = None
        elif action == "add":
            self._entries[key] = dict(fields)
        else:
            entry.update(fields)

    def clear(self) -> None:
        self.domain = "MarketPrice"
        self.summary = {}
        self._entries = {}
        self._sorted = None

    def keys(self) -> List[Key]:
        """Every key, in order."""
        if self._sorted is None:
            self._sorted = sorted(self._entries, key=_order)
        return list(self._sorted)

    def find(self, key: Union[Key, int, float]) -> Optional[Fields]:
        """The entry's fields, or None. A price may be given as an int, a float
        (its shortest decimal form: 101.25) or a str for a MarketByPrice book."""
        if self.domain == "MarketByPrice" and not isinstance(key, (Decimal, bytes)):
            key = Decimal(repr(key)) if isinstance(key, float) else Decimal(key)
        return self._entries.get(key)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[Tuple[Key, Fields]]:
        return ((key, self._entries[key]) for key in self.keys())

    def __reversed__(self) -> Iterator[Tuple[Key, Fields]]:
        return ((key, self._entries[key]) for key in reversed(self.keys()))

    def to_dict(self) -> Dict[Key, Fields]:
        """``{key: {field: value}}`` in key order (copies)."""
        return {key: dict(fields) for key, fields in self}

    def to_dataframe(self) -> Any:
        """A pandas DataFrame: one row per entry in key order (index ``key``), one
        column per field (in the order first seen); NaN where an entry lacks a field.
        ImportError naming the package when pandas is missing."""
        try:
            import pandas
        except ImportError as error:
            raise ImportError("mdcast.Book.to_dataframe needs pandas (pip install pandas, or "
                              "apt install python3-pandas); Book.to_dict gives the same as a "
                              "dict") from error
        keys = self.keys()
        columns: Dict[Union[str, int], None] = {}
        for key in keys:
            columns.update(dict.fromkeys(self._entries[key]))
        frame = pandas.DataFrame([self._entries[key] for key in keys], index=keys,
                                 columns=list(columns))
        frame.index.name = "key"
        return frame

    def __repr__(self) -> str:
        return f"<mdcast.Book {self.domain} entries={len(self._entries)}>"
