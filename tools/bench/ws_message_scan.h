// The WebSocket load client's reading of the server's JSON messages
// (docs/websocket.md): a scan for the few members it counts and checks, not a
// JSON parser, so that the client is not the bottleneck of a fan-out bench.
//
// It relies on what the server guarantees: one JSON object per text message
// (alone, or as an array of exactly one, as the server sends it: an array of
// several is not told apart from one),
// the stream members ("ID", "Type", "Domain", "Key", "State", "SeqNumber",
// "PublishTime", "Conflated", "ConflationInfo") before "Fields", and no raw quote inside a string
// (a key pattern such as "SeqNumber": cannot match inside a string value). Anything else is
// reported as malformed, never guessed at.
#pragma once

#include <cstdint>
#include <string_view>

namespace mdcast::tools {

enum class WsMessageType { kRefresh, kUpdate, kStatus, kPing, kPong, kError, kOther };

struct WsMessage {
    WsMessageType type = WsMessageType::kOther;
    std::string_view type_text;  // the "Type" as sent
    int64_t id = 0;              // "ID" (0 when absent)
    bool login = false;          // "Domain":"Login"
    bool has_seq = false;
    uint64_t seq = 0;              // "SeqNumber"
    uint64_t publish_time_ns = 0;  // "PublishTime" (clients.ws_publish_time; 0 when absent)
    bool conflated = false;
    uint32_t conflation_count = 0;              // "ConflationInfo":{"Count": updates it stands for}
    std::string_view service, name;             // "Key" (Refresh, Status)
    std::string_view stream, data, code, text;  // "State" (Refresh, Status)
    std::string_view error_text;                // an Error's "Text"
};

// Scans one message. False (and `why` set) when it is not an object with a
// "Type" the client can read.
bool scan_ws_message(std::string_view message, WsMessage& out, std::string_view& why);

}  // namespace mdcast::tools
