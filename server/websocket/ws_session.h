// The WebSocket side of one client connection: the HTTP handshake (or the
// watchlist page), wslay's framing of what the client sends, and the JSON
// requests turned into the same calls a binary client's frames make.
//
// A ClientSession owns one when its connection came in on clients.ws_port.
// What the session itself answers (login, statuses of requests, pongs) is
// translated here; item frames arrive already encoded by the fan-out, once per
// view (JsonEncoder). wslay reassembles fragments and answers control frames;
// a message over clients.ws_max_message_bytes, more fragments than
// clients.ws_max_fragments, binary data or invalid UTF-8 close the connection
// with a WebSocket close code and a reason; JSON that is not a request is
// answered with an Error message and counted.
#pragma once

#include <google/protobuf/message_lite.h>

#include <array>
#include <cstdint>
#include <functional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/net/close_reason.h"
#include "proto/frame.h"
#include "server/websocket/json_dictionary.h"
#include "server/websocket/json_protocol.h"
#include "server/websocket/json_requests.h"
#include "server/websocket/ws_streams.h"
#include "wire/common.pb.h"
#include "wire/post.pb.h"

struct wslay_event_context;

namespace mdcast::server {

class ClientSession;

// Counted in /metrics (mdcast_server_ws_*).
struct WsCounters {
    uint64_t upgrades = 0;            // handshakes completed
    uint64_t handshakes_refused = 0;  // HTTP requests answered 400/404/405
    uint64_t pages_served = 0;
    uint64_t messages_in = 0;  // JSON text messages
    uint64_t fragment_floods = 0;
    uint64_t too_large = 0;  // messages over clients.ws_max_message_bytes
    uint64_t binary_refused = 0;
    uint64_t protocol_errors = 0;  // framing errors found by wslay (bad opcode, masking, UTF-8)
    std::array<uint64_t, 5> json_errors{};  // by JsonError
    uint64_t pings_sent = 0;
    uint64_t update_encodings = 0;     // JSON updates encoded (once per view, not per client)
    uint64_t unrouted_frames = 0;      // item frames for no open stream (closed before named)
    uint64_t dictionary_requests = 0;  // Dictionary requests answered (refreshes or refusals)
};

struct WsSettings {
    size_t max_message_bytes = 65536;
    size_t max_login_message_bytes = 4096;  // until the login is accepted
    uint32_t max_fragments = 64;
    uint32_t heartbeat_interval_ms = 5000;
    // clients.ws_default_service: for requests without Key.Service (empty: refused).
    std::string default_service;
    JsonLimits json;
    const JsonEncoder* encoder = nullptr;
    JsonDictionary* dictionary = nullptr;  // the Dictionary domain's answers, encoded once
    const std::string* page = nullptr;     // served at /; empty: 404
    WsCounters* counters = nullptr;
};

class WsSession {
  public:
    WsSession(ClientSession& client, const WsSettings& settings);
    ~WsSession();
    WsSession(const WsSession&) = delete;
    WsSession& operator=(const WsSession&) = delete;

    // Bytes as read from the connection (handshake, then frames).
    void on_bytes(std::span<const uint8_t> bytes);
    // TcpConnection::Handler::close_frame: a close frame with the reason's code.
    bool close_frame(CloseReason reason, const std::string& text, std::string& frame);
    // A binary-protocol answer of the session (login response, item status) as JSON.
    void translate(proto::FrameType type, const google::protobuf::MessageLite& message);
    // Housekeeping: a Ping when the client was silent for the heartbeat interval.
    void keep_alive(int64_t now_ns);
    bool upgraded() const { return ctx_ != nullptr; }
    const JsonEncoder& encoder() const { return *settings_.encoder; }

    // Item streams (ws_streams.h). The server named the item of service/name.
    void bind(const std::string& service, const std::string& name, uint64_t item_id) {
        streams_.bind(service, name, item_id);
    }
    // An item frame encoded with the item id goes out once per stream of the
    // item, restamped with that stream's id; `queue` queues one and says whether
    // to go on. `snapshot`: only the item's snapshot streams, which it completes.
    using QueueFrame = std::function<bool(std::span<const uint8_t>)>;
    void send_item(uint64_t item_id, std::span<const uint8_t> frame, bool snapshot,
                   const QueueFrame& queue);
    // A Stream Closed status went out for the item: its stream ids are free.
    void item_closed(uint64_t item_id) { streams_.forget_item(item_id); }
    size_t stream_count() const { return streams_.size(); }

  private:
    void on_head_bytes(std::span<const uint8_t> bytes);
    void upgrade(std::span<const uint8_t> rest);
    void on_frames(std::span<const uint8_t> bytes);
    void after_wslay();
    void on_message(uint8_t opcode, std::string_view text);
    void on_request(const JsonRequest& request);
    void on_request_without_service(JsonRequest request, std::string_view text);
    void on_item_request(const JsonRequest& request);
    bool open_stream(int64_t stream, const JsonRequest& request, const std::string& name);
    void on_item_status(const wire::ItemStatus& status);
    void on_dictionary_request(const JsonRequest& request);  // ws_session_dictionary.cpp
    void unsubscribe_unrouted();
    void on_post(const JsonRequest& request);
    void on_post_ack(const wire::PostAck& ack);
    void answer_post(const JsonRequest& request, std::string_view nak_code,
                     const std::string& text);
    void refuse(JsonError error, const std::string& text, std::string_view offending);
    void fail(CloseReason reason, uint16_t code, const std::string& text);
    void send(const std::string& frame);

    friend struct WsCallbacks;  // wslay's callbacks (ws_session.cpp)

    ClientSession& client_;
    WsSettings settings_;
    std::string head_;  // the HTTP request head, until the upgrade
    wslay_event_context* ctx_ = nullptr;
    std::span<const uint8_t> input_;  // what wslay's recv callback reads from
    uint32_t fragments_ = 0;          // frames of the message being received
    uint64_t message_bytes_ = 0;      // and their payload so far
    bool fragment_flood_ = false;
    bool too_large_ = false;
    uint16_t close_code_ = 0;  // set by fail(): the code of our close frame
    int64_t login_id_ = 1;
    int64_t directory_id_ = 0;       // the Source request being answered
    uint32_t directory_filter_ = 0;  // and its Key.Filter
    int64_t last_ping_ns_ = 0;
    WsStreams streams_;
    std::set<int64_t> dictionary_streams_;  // streaming Dictionary requests open, until Close
    std::string stamped_;                   // scratch for restamped frames
    // The request being passed to the server: a refusal of it as a whole (no
    // item named) is answered on each of its streams.
    const std::vector<std::pair<std::string, std::string>>* requesting_ = nullptr;
    std::set<uint64_t> unrouted_;  // items to unsubscribe at the next housekeeping
    // Posts passed to the server, by the id this session gave them, until their PostAck.
    struct PendingPost {
        int64_t stream = 0;         // where the Ack goes: the item's stream, or the login's
        uint64_t client_id = 0;     // the client's PostID
        bool ack = false;           // the client asked for an Ack
        std::string service, name;  // an off-stream post's Key
    };
    std::unordered_map<uint64_t, PendingPost> posts_;
    uint64_t next_post_id_ = 1;
};

}  // namespace mdcast::server
