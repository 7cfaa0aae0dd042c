"""Exceptions of the mdcast package."""


class MdcastError(Exception):
    """Base class of every error the mdcast package raises on its own."""


class NotConnected(MdcastError, ConnectionError):
    """No server (or distributor) could be logged in to in time.

    ``text`` is the last reason the SDK saw, e.g. ``connection refused`` when the
    server is down."""

    def __init__(self, message: str, text: str = ""):
        super().__init__(message)
        self.text = text


class LoginRefused(NotConnected, PermissionError):
    """The server refused the login; ``text`` carries its reason, e.g.
    ``login_refused: auth_failed: login refused: unknown user or wrong password``."""


class ConsumerStopped(MdcastError):
    """The consumer was stopped; no more events will come."""
