// Value types shared by the consumer and publisher APIs of libmdcast: server
// addresses, item states, field values and service descriptions.
//
// Nothing here allocates on its own or touches the network; every type is a
// plain value that may be copied between threads.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/export.h"

namespace mdcast {

// One server (or distributor) in a failover list.
struct ServerAddress {
    std::string host;
    uint16_t port = 0;

    std::string to_string() const { return host + ":" + std::to_string(port); }
    bool operator==(const ServerAddress&) const = default;
};

// Parses "host:port[,host:port...]". Throws std::invalid_argument naming the
// bad entry.
MDCAST_API std::vector<ServerAddress> parse_server_list(std::string_view text);

// Is more coming on this item's stream?
enum class StreamState : uint8_t { kOpen, kClosed };

// May the application treat the item's data as current?
enum class DataState : uint8_t { kOk, kSuspect };

// Why an item is in its state. Values below 100 come from the server or the
// publisher (proto/wire/common.proto StatusCode); 100 and up are raised by the
// SDK itself.
enum class StatusCode : uint16_t {
    kNone = 0,
    kNotFound = 1,
    kNotEntitled = 2,
    kSourceDown = 3,
    kUnrecoverableLoss = 4,
    kSourceReset = 5,
    kServerShutdown = 6,
    kLimitReached = 7,
    kInvalidRequest = 8,
    kRecovering = 9,
    kAuthFailed = 10,
    // The server's upstream confirmed, after an outage, that the image the
    // server held is current: ok again without a new image.
    kUnchanged = 11,
    // SDK: the connection to the server was lost; a fresh image follows from
    // the next server.
    kConnectionLost = 100,
    // SDK: the item was unsubscribed or the consumer stopped.
    kCancelled = 101,
};

MDCAST_API std::string_view status_code_name(StatusCode code);

// Names for logs and messages: "open"/"closed", "ok"/"suspect", the status
// code as status_code_name() spells it ("CONNECTION_LOST"). operator<< writes
// the same text.
MDCAST_API std::string to_string(StreamState state);
MDCAST_API std::string to_string(DataState state);
MDCAST_API std::string to_string(StatusCode code);
MDCAST_API std::ostream& operator<<(std::ostream& out, StreamState state);
MDCAST_API std::ostream& operator<<(std::ostream& out, DataState state);
MDCAST_API std::ostream& operator<<(std::ostream& out, StatusCode code);

struct ItemState {
    StreamState stream = StreamState::kOpen;
    DataState data = DataState::kOk;
    StatusCode code = StatusCode::kNone;
    std::string text;

    bool ok() const { return stream == StreamState::kOpen && data == DataState::kOk; }
};

// "open/ok", or with a code and text "open/suspect CONNECTION_LOST: <text>".
MDCAST_API std::string to_string(const ItemState& state);
MDCAST_API std::ostream& operator<<(std::ostream& out, const ItemState& state);

enum class FieldKind : uint8_t { kBlank, kInt, kDecimal, kDouble, kString, kTime };

// One field of an image or update. `text` (kString) points into the event or
// field list that holds the value and is valid as long as that object is.
struct FieldValue {
    uint32_t id = 0;
    FieldKind kind = FieldKind::kBlank;
    int32_t exponent = 0;   // kDecimal: value = integer * 10^exponent
    int64_t integer = 0;    // kInt; kDecimal mantissa; kTime: ns since the Unix epoch, UTC
    double real = 0;        // kDouble
    std::string_view text;  // kString

    // The numeric value (decimals scaled); NaN for strings and blanks.
    MDCAST_API double to_double() const;
    // Text rendering: decimals exactly ("101.25"), times as ISO-8601 UTC, blank "".
    MDCAST_API std::string to_string() const;
};

// Writes FieldValue::to_string().
MDCAST_API std::ostream& operator<<(std::ostream& out, const FieldValue& value);

enum class ServiceMode : uint8_t { kBroadcast, kInteractive };

struct ServiceInfo {
    uint32_t id = 0;
    std::string name;
    bool up = false;
    ServiceMode mode = ServiceMode::kBroadcast;
    uint64_t item_count = 0;
    // Redundancy: how many distributors' services of this name form the
    // server's redundancy group (0: none), and whether this one is the member
    // serving subscribers (docs/operations.md, "Redundancy").
    uint32_t group_members = 0;
    bool group_active = false;
};

// The state of a consumer's or publisher's connection.
enum class ConnectionState : uint8_t {
    kConnecting,  // trying `server`
    kUp,          // logged in to `server`
    kDown,        // lost `server` (text says why); the next attempt follows
    kStopped,     // stop() was called; nothing follows
};

MDCAST_API std::string_view connection_state_name(ConnectionState state);
// connection_state_name() as a string and on a stream: "connecting", "up" ...
MDCAST_API std::string to_string(ConnectionState state);
MDCAST_API std::ostream& operator<<(std::ostream& out, ConnectionState state);
// "host:port".
MDCAST_API std::ostream& operator<<(std::ostream& out, const ServerAddress& address);

struct ConnectionEvent {
    ConnectionState state = ConnectionState::kConnecting;
    ServerAddress server;
    std::string server_id;  // kUp: what the server calls itself
    std::string text;       // kDown: why
    uint32_t attempt = 0;   // failed attempts in a row before this one
    // kDown: the reason the server gave in its Close message before it closed the
    // connection ("shutdown", "kicked", "limit_reached", "slow_consumer", ...; the
    // server's text is in `text`); empty when it closed without one (killed,
    // network lost, or the client gave up on it).
    std::string close_reason;
};

// TLS towards the servers (Consumer) or distributors (Publisher): every
// address in the failover list is then a TLS port (clients.tls_port,
// publishers.tls_port).
//
// VERIFICATION (on by default): the peer's certificate must chain to a CA in
// ca_file (empty: the system trust store, /etc/ssl/certs) and must carry the
// host of its ServerAddress (or server_name when set) in its subjectAltName:
// a DNS name for a name, an IP address entry for an IP literal. A peer that
// fails either check is not connected to: the attempt ends with a kDown
// ConnectionEvent whose text says why ("certificate verify failed ...") and
// the next address is tried.
struct TlsOptions {
    bool enabled = false;
    std::string ca_file;              // PEM CAs the peer must chain to; empty: system store
    std::string cert_file;            // PEM client certificate, for peers with tls.client_certs
    std::string key_file;             // its PEM private key
    std::string server_name;          // name to verify instead of ServerAddress::host
    std::string min_version = "1.2";  // "1.2" or "1.3"
    // DANGER: accept any certificate and any name. The link is encrypted but
    // anyone in the path can impersonate the server. For tests and debugging
    // only; the SDK logs a warning on every connection made with it.
    bool insecure_skip_verify = false;
};

// How a consumer or publisher connects, stays connected and fails over;
// ConsumerOptions and PublisherOptions extend it.
struct ConnectionOptions {
    std::string user = "mdcast";
    std::string application_id = "mdcast-sdk";
    std::string position;  // informational; defaults to the host name
    std::string password;

    uint32_t connect_timeout_ms = 2000;  // TCP connect
    uint32_t login_timeout_ms = 3000;    // connected to login response (TLS handshake included)
    // Pings go out this often (or at the peer's interval when that is
    // shorter); the peer answers each. Nothing heard for heartbeat_timeout_ms
    // means the peer or the path is gone: fail over. On loopback a dead peer
    // is seen at once (the socket closes); across a network these two decide,
    // so with the defaults a silent peer is left after 3 to 3.25 s.
    uint32_t heartbeat_interval_ms = 1000;
    uint32_t heartbeat_timeout_ms = 3000;
    // After a failed attempt the next one waits min * 2^(failures - 1), capped
    // at max, drawn from [d * (1 - jitter), d]. A lost session is followed by
    // an attempt on the next peer at once.
    uint32_t reconnect_delay_min_ms = 100;
    uint32_t reconnect_delay_max_ms = 5000;
    double reconnect_jitter = 0.5;
    // A session lost sooner than this after its login counts as a failed
    // attempt (back-off grows) instead of failing over at once.
    uint32_t reconnect_stable_ms = 1000;

    // Level of this consumer's (publisher's) log lines: trace, debug, info,
    // warn, error, off; empty: the process-wide set_log_level() (default
    // warn). Lines go to stderr or to set_log_handler() (mdcast/log.h).
    std::string log_level;

    TlsOptions tls;  // off: plaintext TCP
};

// CLOCK_REALTIME in nanoseconds: the publish stamp the SDK puts in updates.
MDCAST_API uint64_t realtime_now_ns();

}  // namespace mdcast
