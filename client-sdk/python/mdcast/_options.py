"""Options shared by Consumer and Publisher: servers, login, TLS, heartbeats."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Optional, Union

from . import _mdcast

PASSWORD_ENV = "MDCAST_PASSWORD"
_PACKAGE_DICTIONARY = os.path.join(os.path.dirname(__file__), "fields.dict")


@dataclass
class Tls:
    """TLS towards the servers' (or distributors') TLS ports.

    The server's certificate must chain to ``ca_file`` (empty: the system trust
    store) and name the host of its address (or ``server_name``).
    ``insecure_skip_verify`` accepts any certificate: for tests only."""

    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""
    server_name: str = ""
    min_version: str = "1.2"
    insecure_skip_verify: bool = False


def load_password(password: Optional[str], password_file: Optional[str]) -> str:
    """``password`` if given, else the first line of ``password_file``, else
    ``$MDCAST_PASSWORD``, else empty (as the C++ tools do)."""
    if password is not None:
        return password
    if password_file:
        with open(password_file, encoding="utf-8") as f:
            return f.readline().rstrip("\r\n")
    return os.environ.get(PASSWORD_ENV, "")


def load_dictionary(dictionary: Union[None, str, "_mdcast.Dictionary"]) -> "_mdcast.Dictionary":
    """A Dictionary object; a path to load; or None: $MDCAST_DICTIONARY or the
    one installed with libmdcast, else the copy inside this package."""
    if isinstance(dictionary, _mdcast.Dictionary):
        return dictionary
    if dictionary is not None:
        return _mdcast.Dictionary.load_file(os.fspath(dictionary))
    return _mdcast.Dictionary.load_installed() or _mdcast.Dictionary.load_file(_PACKAGE_DICTIONARY)


def server_list(servers: Union[str, Iterable[str]]) -> list:
    """"host:port,host:port" or a list of "host:port", in failover order."""
    if isinstance(servers, str):
        servers = servers.split(",")
    result = [s.strip() for s in servers if s.strip()]
    if not result:
        raise ValueError("at least one server address (host:port) is needed")
    return result


def _ms(seconds: float, what: str) -> int:
    if seconds <= 0:
        raise ValueError(f"{what} must be > 0 seconds")
    return max(1, round(seconds * 1000))


def apply_connection_options(options, *, user: str, password: Optional[str],
                             password_file: Optional[str], application_id: str,
                             tls: Optional[Tls], heartbeat_interval: float,
                             heartbeat_timeout: float, connect_timeout: float,
                             login_timeout: float, reconnect_delay_min: float,
                             reconnect_delay_max: float, log_level: str) -> None:
    """Fills the C++ ConnectionOptions part of ConsumerOptions/PublisherOptions."""
    options.user = user
    options.password = load_password(password, password_file)
    options.application_id = application_id
    options.heartbeat_interval_ms = _ms(heartbeat_interval, "heartbeat_interval")
    options.heartbeat_timeout_ms = _ms(heartbeat_timeout, "heartbeat_timeout")
    options.connect_timeout_ms = _ms(connect_timeout, "connect_timeout")
    options.login_timeout_ms = _ms(login_timeout, "login_timeout")
    options.reconnect_delay_min_ms = _ms(reconnect_delay_min, "reconnect_delay_min")
    options.reconnect_delay_max_ms = _ms(reconnect_delay_max, "reconnect_delay_max")
    options.log_level = log_level
    if tls is not None:
        t = _mdcast.TlsOptions()
        t.enabled = True
        t.ca_file = tls.ca_file
        t.cert_file = tls.cert_file
        t.key_file = tls.key_file
        t.server_name = tls.server_name
        t.min_version = tls.min_version
        t.insecure_skip_verify = tls.insecure_skip_verify
        options.tls = t
