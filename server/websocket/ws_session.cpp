#include "server/websocket/ws_session.h"

#include <wslay/wslay.h>

#include "common/clock.h"
#include "proto/websocket/ws_frames.h"
#include "proto/websocket/ws_handshake.h"
#include "server/client_session.h"
#include "server/make_status.h"

namespace mdcast::server {

using proto::FrameType;
using proto::ws_close_frame;
using proto::WsHandshake;

// WebSocket close codes (RFC 6455 section 7.4.1).
namespace ws_code {
constexpr uint16_t kNormal = 1000;
constexpr uint16_t kGoingAway = 1001;
constexpr uint16_t kProtocolError = 1002;
constexpr uint16_t kUnsupportedData = 1003;
constexpr uint16_t kPolicyViolation = 1008;
constexpr uint16_t kMessageTooBig = 1009;
}  // namespace ws_code

namespace {

uint16_t code_for(CloseReason reason) {
    switch (reason) {
        case CloseReason::kProtocolError:
            return ws_code::kProtocolError;
        case CloseReason::kFrameTooLarge:
            return ws_code::kMessageTooBig;
        case CloseReason::kShutdown:
        case CloseReason::kIdleTimeout:
        case CloseReason::kKicked:
            return ws_code::kGoingAway;
        case CloseReason::kPeerClosed:
            return ws_code::kNormal;
        default:
            return ws_code::kPolicyViolation;  // auth, login, slow consumer, limits
    }
}

wire::StatusCode status_code_for(CloseReason reason) {
    switch (reason) {
        case CloseReason::kShutdown:
            return wire::STATUS_SERVER_SHUTDOWN;
        case CloseReason::kAuthFailed:
        case CloseReason::kNotLoggedIn:
            return wire::STATUS_AUTH_FAILED;
        case CloseReason::kSlowConsumer:
        case CloseReason::kLimitReached:
        case CloseReason::kFrameTooLarge:
            return wire::STATUS_LIMIT_REACHED;
        case CloseReason::kProtocolError:
        case CloseReason::kFrameTimeout:
            return wire::STATUS_INVALID_REQUEST;
        default:
            return wire::STATUS_NONE;  // kicked, idle: the text says which
    }
}

}  // namespace

struct WsCallbacks {
    static ssize_t recv(wslay_event_context_ptr ctx, uint8_t* buf, size_t len, int, void* self) {
        auto& s = *static_cast<WsSession*>(self);
        if (s.fragment_flood_ || s.too_large_ || !s.client_.is_open()) {
            wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
            return -1;
        }
        if (s.input_.empty()) {
            wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
            return -1;
        }
        const size_t n = std::min(len, s.input_.size());
        std::copy_n(s.input_.begin(), n, buf);
        s.input_ = s.input_.subspan(n);
        return static_cast<ssize_t>(n);
    }
    // Control frames wslay answers itself (pong, close): straight into the output queue.
    static ssize_t send(wslay_event_context_ptr, const uint8_t* data, size_t len, int, void* self) {
        auto& s = *static_cast<WsSession*>(self);
        s.client_.deliver({data, len});
        return static_cast<ssize_t>(len);
    }
    static void frame_start(wslay_event_context_ptr, const wslay_event_on_frame_recv_start_arg* arg,
                            void* self) {
        auto& s = *static_cast<WsSession*>(self);
        if (arg->opcode >= 0x8) return;  // control frames may come between fragments
        if (arg->opcode != 0) {          // the first frame of a message
            s.fragments_ = 0;
            s.message_bytes_ = 0;
        }
        if (++s.fragments_ > s.settings_.max_fragments) s.fragment_flood_ = true;
        const size_t limit = s.client_.logged_in() ? s.settings_.max_message_bytes
                                                   : std::min(s.settings_.max_message_bytes,
                                                              s.settings_.max_login_message_bytes);
        if (arg->payload_length > limit - s.message_bytes_) {
            s.too_large_ = true;  // refused from its header: its payload is never read
            return;
        }
        s.message_bytes_ += arg->payload_length;
    }
    static void message(wslay_event_context_ptr, const wslay_event_on_msg_recv_arg* arg,
                        void* self) {
        auto& s = *static_cast<WsSession*>(self);
        s.on_message(arg->opcode, {reinterpret_cast<const char*>(arg->msg), arg->msg_length});
    }
};

WsSession::WsSession(ClientSession& client, const WsSettings& settings)
    : client_(client), settings_(settings), streams_(client.limits().max_subscriptions) {}

WsSession::~WsSession() {
    if (ctx_) wslay_event_context_free(ctx_);
}

void WsSession::send(const std::string& frame) {
    client_.deliver({reinterpret_cast<const uint8_t*>(frame.data()), frame.size()});
}

void WsSession::on_bytes(std::span<const uint8_t> bytes) {
    if (ctx_) return on_frames(bytes);
    on_head_bytes(bytes);
}

void WsSession::on_head_bytes(std::span<const uint8_t> bytes) {
    const size_t before = head_.size();
    head_.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    const auto length = WsHandshake::head_length(head_);
    if (!length) {
        if (head_.size() <= WsHandshake::kMaxHeadBytes) return;
        ++settings_.counters->handshakes_refused;
        send(WsHandshake::http_error(431, "Request Header Fields Too Large",
                                     "request head over 8192 bytes"));
        return client_.connection().close(CloseReason::kProtocolError,
                                          "HTTP request head over 8192 bytes");
    }
    const auto request = WsHandshake::parse(std::string_view(head_).substr(0, *length));
    const auto answer =
        request ? WsHandshake::answer(*request, *settings_.page)
                : WsHandshake::Answer{WsHandshake::Kind::kRefused,
                                      WsHandshake::http_error(400, "Bad Request", "not HTTP/1.1"),
                                      "not an HTTP/1.1 request"};
    send(answer.response);
    if (answer.kind == WsHandshake::Kind::kUpgrade) {
        ++settings_.counters->upgrades;
        return upgrade(bytes.subspan(*length - before));
    }
    if (answer.kind == WsHandshake::Kind::kPage) {
        ++settings_.counters->pages_served;
        return client_.connection().close_after_flush(CloseReason::kHttpAnswered, "page served");
    }
    ++settings_.counters->handshakes_refused;
    client_.connection().close(CloseReason::kHttpAnswered, answer.why);
}

void WsSession::upgrade(std::span<const uint8_t> rest) {
    static const wslay_event_callbacks callbacks{&WsCallbacks::recv,
                                                 &WsCallbacks::send,
                                                 nullptr,
                                                 &WsCallbacks::frame_start,
                                                 nullptr,
                                                 nullptr,
                                                 &WsCallbacks::message};
    head_ = std::string();  // frees it: an idle connection keeps only wslay's context
    if (wslay_event_context_server_init(&ctx_, &callbacks, this) != 0) {
        ctx_ = nullptr;
        return client_.connection().close(CloseReason::kLimitReached, "out of memory");
    }
    // The size limit is ours (frame_start), checked from each frame's header so
    // the close can say which limit it was; wslay's is only a backstop.
    wslay_event_config_set_max_recv_msg_length(ctx_, uint64_t{settings_.max_message_bytes} * 2);
    last_ping_ns_ = monotonic_ns();
    if (!rest.empty()) on_frames(rest);  // frames sent right behind the handshake
}

void WsSession::on_frames(std::span<const uint8_t> bytes) {
    input_ = bytes;
    const int result = wslay_event_recv(ctx_);
    input_ = {};
    if (!client_.is_open()) return;
    if (too_large_) {
        ++settings_.counters->too_large;
        return fail(CloseReason::kFrameTooLarge, ws_code::kMessageTooBig,
                    client_.logged_in()
                        ? "message over " + std::to_string(settings_.max_message_bytes) +
                              " bytes (clients.ws_max_message_bytes)"
                        : "message over " + std::to_string(settings_.max_login_message_bytes) +
                              " bytes before the login (clients.max_login_frame_bytes)");
    }
    if (fragment_flood_) {
        ++settings_.counters->fragment_floods;
        return fail(CloseReason::kProtocolError, ws_code::kPolicyViolation,
                    "fragmented flood: more than " + std::to_string(settings_.max_fragments) +
                        " fragments in one message (clients.ws_max_fragments)");
    }
    if (result != 0 && result != WSLAY_ERR_WOULDBLOCK)
        return fail(CloseReason::kProtocolError, ws_code::kProtocolError,
                    "WebSocket error " + std::to_string(result));
    after_wslay();
}

// wslay may have queued a pong or a close (the client's close answered, or a
// protocol error or an oversized message it refused): send it, and end the
// connection once a close went out.
void WsSession::after_wslay() {
    wslay_event_send(ctx_);
    if (!wslay_event_get_close_sent(ctx_) || !client_.is_open()) return;
    const uint16_t sent = wslay_event_get_status_code_sent(ctx_);
    if (wslay_event_get_close_received(ctx_)) {
        return client_.connection().close(
            CloseReason::kPeerClosed,
            "client sent close " + std::to_string(wslay_event_get_status_code_received(ctx_)));
    }
    ++settings_.counters->protocol_errors;
    client_.connection().close(
        CloseReason::kProtocolError,
        "WebSocket protocol error (close code " + std::to_string(sent) + ")");
}

void WsSession::fail(CloseReason reason, uint16_t code, const std::string& text) {
    close_code_ = code;
    client_.connection().close(reason, text);
}

bool WsSession::close_frame(CloseReason reason, const std::string& text, std::string& frame) {
    // Before the upgrade the peer speaks HTTP; after a close went out, nothing more.
    if (!ctx_ || wslay_event_get_close_sent(ctx_)) return true;
    if (reason == CloseReason::kReadError || reason == CloseReason::kWriteError) return false;
    const std::string why = std::string(close_reason_name(reason)) + ": " + text;
    // LSEG's clients learn why from the login stream's Closed status; the close frame follows.
    if (client_.logged_in() && reason != CloseReason::kPeerClosed) {
        frame = JsonEncoder::login_status(
            login_id_, client_.user(),
            make_status(wire::STREAM_CLOSED, wire::DATA_SUSPECT, status_code_for(reason), why));
    }
    frame += ws_close_frame(close_code_ ? close_code_ : code_for(reason), why);
    return true;
}

void WsSession::on_message(uint8_t opcode, std::string_view text) {
    if (!client_.is_open() || fragment_flood_ || too_large_) return;
    if (opcode == WSLAY_BINARY_FRAME) {
        ++settings_.counters->binary_refused;
        return fail(CloseReason::kProtocolError, ws_code::kUnsupportedData,
                    "binary message: this port speaks JSON text");
    }
    if (opcode != WSLAY_TEXT_FRAME) return;  // ping, pong, close: wslay answers them
    ++settings_.counters->messages_in;
    for (const JsonMessage& message : parse_json_requests(text, settings_.json)) {
        if (!client_.is_open()) return;
        if (message.error != JsonError::kNone) {
            refuse(message.error, message.error_text, text);
        } else if (message.request.type == JsonRequest::Type::kItem &&
                   message.request.service.empty()) {
            on_request_without_service(message.request, text);
        } else {
            on_request(message.request);
        }
    }
}

// LSEG's servers serve a request without Key.Service from their default
// service, and LSEG's clients rely on it.
void WsSession::on_request_without_service(JsonRequest request, std::string_view text) {
    if (settings_.default_service.empty())
        return refuse(JsonError::kBadRequest,
                      "Key.Service missing (no clients.ws_default_service set)", text);
    request.service = settings_.default_service;
    on_request(request);
}

void WsSession::refuse(JsonError error, const std::string& text, std::string_view offending) {
    ++settings_.counters->json_errors[static_cast<size_t>(error)];
    send(JsonEncoder::error(text, offending));
}

void WsSession::on_request(const JsonRequest& request) {
    using Type = JsonRequest::Type;
    if (request.type == Type::kPing) return send(JsonEncoder::pong());
    if (request.type == Type::kPong) return;
    if (request.type == Type::kLogin) {
        login_id_ = request.id;
        wire::LoginRequest login;
        login.set_user(request.user);
        login.set_password(request.password);
        login.set_application_id(request.application_id);
        login.set_position(request.position);
        return client_.request_login(login);
    }
    if (!client_.logged_in())
        return fail(CloseReason::kNotLoggedIn, ws_code::kPolicyViolation,
                    "the first request must be a login");
    if (request.type == Type::kCloseLogin)
        return fail(CloseReason::kPeerClosed, ws_code::kNormal, "client closed its login");
    if (request.type == Type::kPost) return on_post(request);
    if (request.type == Type::kSource) {
        directory_id_ = request.id;
        directory_filter_ = request.filter.value_or(kSourceInfo | kSourceState);
        return client_.request_directory();
    }
    if (request.type == Type::kDictionary) return on_dictionary_request(request);
    if (request.type == Type::kClose) {
        for (const int64_t id : request.close_ids) {
            dictionary_streams_.erase(id);
            const auto closed = streams_.close(id);
            if (closed && closed->unsubscribe) client_.request_unsubscribe(closed->unsubscribe);
        }
        return;
    }
    on_item_request(request);
}

// A single name opens on the request's ID; a batch answers on its ID and opens
// its names on ID+1, ID+2, ... (LSEG's numbering).
void WsSession::on_item_request(const JsonRequest& request) {
    const auto stream_of = [&](size_t i) {
        return request.batch ? request.id + 1 + static_cast<int64_t>(i) : request.id;
    };
    wire::Subscribe subscribe;
    subscribe.set_service_name(request.service);
    subscribe.set_snapshot(!request.streaming);
    subscribe.set_conflate_ms(request.conflate_ms);
    for (const uint32_t id : request.view_ids) subscribe.add_view_field_ids(id);
    for (const std::string& field : request.view) {
        const proto::FieldDefinition* definition = encoder().dictionary().find(field);
        if (definition) {
            subscribe.add_view_field_ids(definition->id);
            continue;
        }
        const auto refused =
            make_status(wire::STREAM_CLOSED, wire::DATA_SUSPECT, wire::STATUS_INVALID_REQUEST,
                        "View: no field named " + field.substr(0, 64));
        for (size_t i = 0; i < request.names.size(); ++i)
            send(encoder().status(request.service, request.names[i], stream_of(i), refused));
        return;
    }
    if (request.batch) send(JsonEncoder::batch_status(request.id, request.names.size()));
    std::vector<std::pair<std::string, std::string>> opened;
    for (size_t i = 0; i < request.names.size(); ++i) {
        if (!open_stream(stream_of(i), request, request.names[i])) continue;
        subscribe.add_item_names(request.names[i]);
        opened.emplace_back(request.service, request.names[i]);
    }
    if (opened.empty()) return;
    requesting_ = &opened;
    client_.request_subscribe(subscribe);
    requesting_ = nullptr;
}

bool WsSession::open_stream(int64_t stream, const JsonRequest& request, const std::string& name) {
    dictionary_streams_.erase(stream);  // an item request takes the ID over
    const auto result = streams_.open(stream, request.service, name, request.streaming);
    if (result.unsubscribe) client_.request_unsubscribe(result.unsubscribe);
    if (result.opened != WsStreams::Opened::kLimitReached) return true;
    send(encoder().status(
        request.service, name, stream,
        make_status(wire::STREAM_CLOSED, wire::DATA_SUSPECT, wire::STATUS_LIMIT_REACHED,
                    "too many open streams (clients.max_subscriptions)")));
    return false;
}

void WsSession::send_item(uint64_t item_id, std::span<const uint8_t> frame, bool snapshot,
                          const QueueFrame& queue) {
    const std::vector<int64_t> snapshots =
        snapshot ? streams_.take_snapshots(item_id) : std::vector<int64_t>{};
    const std::span<const int64_t> streams = snapshot ? snapshots : streams_.streams_of(item_id);
    if (streams.empty()) {
        ++settings_.counters->unrouted_frames;
        if (!snapshot) unrouted_.insert(item_id);
        return;
    }
    for (const int64_t stream : streams) {
        stamped_.clear();
        if (!restamp_stream_id(frame, stream, stamped_)) return;
        if (!queue({reinterpret_cast<const uint8_t*>(stamped_.data()), stamped_.size()})) return;
    }
}

// Statuses the session passes on itself (answers to a request; the fan-out's
// go through send_item): bound to their item, or answered on the streams that
// asked when no item was named.
void WsSession::on_item_status(const wire::ItemStatus& status) {
    const auto& service = status.service_name();
    const auto& name = status.item_name();
    if (status.item_id() == 0) {
        std::vector<int64_t> asked = streams_.take_pending(service, name);
        if (asked.empty() && name.empty() && requesting_) {
            for (const auto& [s, n] : *requesting_) {
                for (const int64_t stream : streams_.take_pending(s, n)) {
                    send(encoder().status(s, n, stream, status.status()));
                }
            }
            return;
        }
        for (const int64_t stream : asked)
            send(encoder().status(service, name, stream, status.status()));
        return;
    }
    streams_.bind(service, name, status.item_id());
    const std::string frame =
        encoder().status(service, name, static_cast<int64_t>(status.item_id()), status.status());
    send_item(status.item_id(), {reinterpret_cast<const uint8_t*>(frame.data()), frame.size()},
              false, [this](std::span<const uint8_t> bytes) {
                  client_.deliver(bytes);
                  return client_.is_open();
              });
    if (status.status().stream_state() == wire::STREAM_CLOSED)
        streams_.forget_item(status.item_id());
}

// Items whose frames found no stream (closed by the client before the server
// named them): unsubscribed here, outside any fan-out.
void WsSession::unsubscribe_unrouted() {
    const std::set<uint64_t> items = std::move(unrouted_);
    unrouted_.clear();
    for (const uint64_t item_id : items) {
        if (streams_.streams_of(item_id).empty()) client_.request_unsubscribe(item_id);
    }
}

void WsSession::translate(FrameType type, const google::protobuf::MessageLite& message) {
    switch (type) {
        case FrameType::kLoginResponse: {
            const auto& response = static_cast<const wire::LoginResponse&>(message);
            return send(
                response.accepted()
                    ? JsonEncoder::login_refresh(login_id_, client_.user(), response)
                    : JsonEncoder::login_status(login_id_, client_.user(), response.status()));
        }
        case FrameType::kItemStatus:
            return on_item_status(static_cast<const wire::ItemStatus&>(message));
        case FrameType::kPostAck:
            return on_post_ack(static_cast<const wire::PostAck&>(message));
        case FrameType::kDirectory:
            return send(JsonEncoder::source_refresh(
                directory_id_, static_cast<const wire::Directory&>(message), directory_filter_));
        default:
            return;  // pong: the JSON protocol has its own
    }
}

void WsSession::keep_alive(int64_t now_ns) {
    if (!ctx_) return;
    if (!unrouted_.empty()) unsubscribe_unrouted();
    const int64_t interval = int64_t{settings_.heartbeat_interval_ms} * 1'000'000;
    if (now_ns - client_.connection().last_input_ns() < interval ||
        now_ns - last_ping_ns_ < interval)
        return;
    last_ping_ns_ = now_ns;
    ++settings_.counters->pings_sent;
    send(JsonEncoder::ping());
}

}  // namespace mdcast::server
