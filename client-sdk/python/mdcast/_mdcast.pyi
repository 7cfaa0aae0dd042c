"""Type stubs of the C++ extension under the mdcast package (libmdcast bindings)."""
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union, overload

FieldKey = Union[str, int]
Value = Union[None, int, float, str]

class StatusCode:
    """Why an item is in its state (a pybind11 enum: ``.name``, ``.value``, int())."""
    NONE: StatusCode
    NOT_FOUND: StatusCode
    NOT_ENTITLED: StatusCode
    SOURCE_DOWN: StatusCode
    UNRECOVERABLE_LOSS: StatusCode
    SOURCE_RESET: StatusCode
    SERVER_SHUTDOWN: StatusCode
    LIMIT_REACHED: StatusCode
    INVALID_REQUEST: StatusCode
    RECOVERING: StatusCode
    CONNECTION_LOST: StatusCode
    CANCELLED: StatusCode
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...
    def __int__(self) -> int: ...

class Dictionary:
    """Field id <-> name <-> kind (etc/fields.dict)."""
    @staticmethod
    def load_file(path: str) -> Dictionary: ...
    @staticmethod
    def parse(text: str) -> Dictionary: ...
    @staticmethod
    def load_installed() -> Optional[Dictionary]: ...
    def id(self, name: str) -> Optional[int]: ...
    def name(self, id: int) -> Optional[str]: ...
    def kind(self, id: int) -> Optional[str]:
        """'BLANK', 'INT', 'DECIMAL', 'DOUBLE', 'STRING' or 'TIME'."""
    def __len__(self) -> int: ...
    def __contains__(self, name: str) -> bool: ...

class Service:
    """One service of a directory answer."""
    id: int
    name: str
    up: bool
    mode: str  # 'broadcast' or 'interactive'
    item_count: int

class Event:
    """One refresh, update, status, connection or directory event.

    Values are decoded when asked for: INT -> int, DECIMAL and DOUBLE -> float,
    STRING -> str, TIME -> int (ns since the epoch, UTC), blank -> None."""
    kind: str  # 'refresh', 'update', 'status', 'connection', 'directory'
    handle: int
    service: str
    item: str
    sequence: int
    publish_time_ns: int  # the publisher's CLOCK_REALTIME stamp; 0 when not stamped
    receive_time_ns: int  # when the SDK read the message
    snapshot: bool  # a refresh answering snapshot(): nothing follows
    conflated: bool  # several updates merged by the server (conflate_ms or a slow consumer)
    trade: bool  # the publisher marked it a trade: never merged by conflation
    stands_for: int  # conflated: the published updates it merges (0: not counted)
    first_publish_time_ns: int  # conflated: the first one's stamp (the span ends at publish_time_ns)
    stream_state: str  # 'open' or 'closed'
    data_state: str  # 'ok' or 'suspect'
    status_code: StatusCode
    status_text: str  # the server's text (connection events: why it went down)
    ok: bool  # open and ok
    fields: Dict[FieldKey, Value]  # name -> value (ids the dictionary lacks as int)
    connection_state: Optional[str]  # 'connecting', 'up', 'down', 'stopped'
    server: Optional[str]  # "host:port"
    server_id: Optional[str]
    close_reason: Optional[str]  # 'down': the server's reason ('kicked', 'shutdown', ...); '' if none
    attempt: int
    services: List[Service]
    domain: str  # a refresh's: 'MarketPrice' (a field list), 'MarketByPrice', 'MarketByOrder', 'SymbolList'
    book_entries: List[Any]  # mdcast.BookEntry: a book refresh's entries, a book update's actions
    def __getitem__(self, field: FieldKey) -> Value:
        """KeyError when the field is not in this event."""
    def get(self, field: FieldKey, default: Any = None) -> Any: ...
    def __contains__(self, field: FieldKey) -> bool: ...
    def text(self, field: FieldKey) -> Optional[str]:
        """The exact text of a value: decimals as sent ('101.25'), times ISO-8601."""

class Batch:
    """The events one read handed over, oldest first."""
    def __len__(self) -> int: ...
    def __getitem__(self, index: int) -> Event: ...
    def __iter__(self) -> Iterator[Event]: ...
    def events(self) -> List[Event]: ...
    def values(self, field: FieldKey, default: Any = None) -> List[Any]:
        """The field's value in every event, in order; `default` where absent."""
    def items(self) -> List[str]: ...
    def sequences(self) -> List[int]: ...
    def kinds(self) -> List[str]: ...
    def publish_times_ns(self) -> List[int]: ...

class TlsOptions:
    enabled: bool
    ca_file: str
    cert_file: str
    key_file: str
    server_name: str
    min_version: str
    insecure_skip_verify: bool
    def __init__(self) -> None: ...

class _ConnectionOptions:
    user: str
    application_id: str
    position: str
    password: str
    connect_timeout_ms: int
    login_timeout_ms: int
    heartbeat_interval_ms: int
    heartbeat_timeout_ms: int
    reconnect_delay_min_ms: int
    reconnect_delay_max_ms: int
    reconnect_jitter: float
    log_level: str
    tls: TlsOptions

class ConsumerOptions(_ConnectionOptions):
    servers: List[str]
    catch_up_timeout_ms: int
    busy_poll_us: int
    max_frame_bytes: int
    dictionary: Optional[Dictionary]
    def __init__(self) -> None: ...

class PublisherOptions(_ConnectionOptions):
    distributors: List[str]
    publish_to_all: bool
    max_queued_bytes: int
    takeover_secret: str
    standby_rank: int
    def __init__(self) -> None: ...

View = Optional[Sequence[FieldKey]]

class PendingPost:
    def wait(self, timeout: float) -> bool: ...
    def result(self) -> Tuple[int, bool, StatusCode, str]: ...

class ConsumerCore:
    def __init__(self, options: ConsumerOptions, max_queued_events: int) -> None: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def subscribe(self, service: str, item: str, view: View = None, conflate_ms: int = 0) -> int: ...
    def subscribe_batch(self, service: str, items: List[str], view: View = None,
                        conflate_ms: int = 0) -> List[int]: ...
    def snapshot(self, service: str, item: str, view: View = None) -> int: ...
    def snapshot_batch(self, service: str, items: List[str], view: View = None) -> List[int]: ...
    def unsubscribe(self, handle: int) -> None: ...
    def request_directory(self) -> None: ...
    def post(self, handle: int, fields: Dict[FieldKey, Any]) -> PendingPost: ...
    def post_to(self, service: str, item: str, fields: Dict[FieldKey, Any]) -> PendingPost: ...
    def take(self, timeout: float) -> Batch: ...
    def fileno(self) -> int: ...
    closed: bool
    waiting: int
    full_waits: int
    def stats(self) -> Dict[str, int]: ...
    def wait_connected(self, timeout: float) -> Tuple[str, str, str]: ...

class PublisherCore:
    def __init__(self, options: PublisherOptions, dictionary: Dictionary,
                 callback: Callable[..., Any]) -> None: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def add_service(self, name: str, interactive: bool = False) -> None: ...
    def add_item(self, service: str, item: str) -> int: ...
    def refresh(self, item: int, fields: Dict[FieldKey, Any], stream: str = "open",
                data: str = "ok", code: StatusCode = StatusCode.NONE, text: str = "") -> bool: ...
    def update(self, item: int, fields: Dict[FieldKey, Any],
               publish_time_ns: Optional[int] = None, trade: bool = False) -> bool: ...
    def refresh_book(self, item: int, domain: str, summary: Dict[FieldKey, Any], entries: Any,
                     stream: str = "open", data: str = "ok", code: StatusCode = StatusCode.NONE,
                     text: str = "") -> bool: ...
    def update_book(self, item: int, summary: Dict[FieldKey, Any], changes: Any,
                    publish_time_ns: Optional[int] = None) -> bool: ...
    def status(self, item: int, stream: str = "open", data: str = "ok",
               code: StatusCode = StatusCode.NONE, text: str = "") -> bool: ...
    def flush(self, timeout: float) -> bool: ...
    def stats(self) -> Dict[str, int]: ...

def realtime_now_ns() -> int:
    """CLOCK_REALTIME in ns, the clock updates are stamped with."""
def route_log_to_queue() -> None: ...
def route_log_to_stderr() -> None: ...
def take_log_lines(timeout: float) -> list[tuple[str, str]]: ...
def take_log_dropped() -> int: ...
