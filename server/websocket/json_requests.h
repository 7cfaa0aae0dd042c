// Requests of the WebSocket/JSON protocol (docs/websocket.md), modelled on the
// LSEG WebSocket API: Login, item requests (one name or a batch, a View,
// Streaming false for a snapshot), the Source directory, Dictionary requests,
// Post, Close, Ping and Pong.
//
// parse_json_requests() turns one text message into typed requests; it never
// throws and bounds what it accepts (nesting depth, messages per array, names
// per batch, view length), so hostile text costs at most its own length.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mdcast::server {

// A scalar of a posted message's Fields, as JSON gave it (typed by the dictionary later).
struct JsonScalar {
    enum class Kind { kNull, kInt, kFloat, kString };
    Kind kind = Kind::kNull;
    int64_t integer = 0;
    double real = 0;
    std::string text;
};

struct JsonRequest {
    enum class Type {
        kLogin,
        kItem,
        kSource,
        kDictionary,
        kPost,
        kClose,
        kCloseLogin,
        kPing,
        kPong
    };
    Type type = Type::kPing;
    int64_t id = 0;
    // kLogin
    std::string user, password, application_id, position;
    // kItem
    std::string service;             // empty: the session's default service
    std::vector<std::string> names;  // one, or a batch (kDictionary: the dictionary's name)
    bool batch = false;              // Key.Name was an array: the names open on ID+1, ID+2, ...
    bool streaming = true;           // false: a snapshot
    // Key.Filter: kDictionary's verbosity (Normal when absent), kSource's filters (Info and
    // State when absent).
    std::optional<uint32_t> filter;
    uint32_t conflate_ms = 0;        // Qos Rate TimeConflated, RateInfo ms (0: every update)
    std::vector<std::string> view;   // field names; both empty: all fields
    std::vector<uint32_t> view_ids;  // and field ids (LSEG's View takes either)
    // kPost (also service and names[0] for an off-stream post, on the login's ID)
    uint64_t post_id = 0;  // PostID, echoed as the Ack's AckID
    bool ack = false;      // Ack: true asks for an Ack
    std::vector<std::pair<std::string, JsonScalar>> post_fields;  // Message.Fields
    // kClose: stream ids (the IDs of the client's requests)
    std::vector<int64_t> close_ids;
};

enum class JsonError {
    kNone,
    kNotJson,      // not JSON text, or nested too deep
    kUnknownType,  // a Type (or Domain) this server does not serve
    kBadRequest,   // JSON, but a member missing or of the wrong kind
    kTooMany,      // more messages in one array, names or view fields than allowed
};
std::string_view json_error_name(JsonError error);

// One message of the text: a request, or why it is not one.
struct JsonMessage {
    JsonError error = JsonError::kNone;
    std::string error_text;
    JsonRequest request;
};

struct JsonLimits {
    size_t max_messages = 100;  // objects in one top-level array
    size_t max_names = 10000;   // Key.Name entries in one batch
    size_t max_view = 1000;     // View entries
};

// A text message: one object, or an array of them (each answered on its own).
std::vector<JsonMessage> parse_json_requests(std::string_view text, const JsonLimits& limits);

}  // namespace mdcast::server
