"""Posts from Python: the answer to Consumer.post() / post_to()."""
from __future__ import annotations

from typing import NamedTuple, Optional

from . import _mdcast


class PostResult(NamedTuple):
    """A post's answer. ``accepted`` False: ``code`` and ``text`` say why (the
    publisher's own text with code NONE; NOT_ENTITLED, NOT_FOUND (no such service,
    item not open, no publisher), LIMIT_REACHED, SOURCE_DOWN with "timeout ...",
    CONNECTION_LOST, CANCELLED)."""
    post_id: int
    accepted: bool
    code: _mdcast.StatusCode
    text: str


class PostFuture:
    """The answer to one post, once it comes (the GIL is released while waiting)."""

    def __init__(self, pending: _mdcast.PendingPost):
        self._pending = pending
        self._result: Optional[PostResult] = None

    def done(self) -> bool:
        return self._result is not None or self._pending.wait(0)

    def result(self, timeout: Optional[float] = None) -> PostResult:
        """The answer; TimeoutError when it has not come within ``timeout`` s (None:
        waits; it comes within the server's posts.timeout_ms while connected)."""
        if self._result is None:
            if timeout is not None and not self._pending.wait(timeout):
                raise TimeoutError(f"no answer to the post within {timeout} s")
            self._result = PostResult(*self._pending.result())
        return self._result
