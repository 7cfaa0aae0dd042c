#include "mdcast/session.h"

#include "common/clock.h"
#include "session_messages.h"

namespace mdcast::sdk {

using proto::FrameType;
namespace wire = mdcast::wire::v1;

Session::Session(EventLoop& loop, FlushScheduler& flusher, SessionOptions options,
                 proto::FrameTypeSet accepted, Listener& listener, uint64_t id)
    : loop_(loop),
      flusher_(flusher),
      options_(std::move(options)),
      accepted_(accepted),
      listener_(listener),
      id_(id),
      ping_timer_(loop, [this] { send_ping(); }) {}

Session::~Session() = default;

bool Session::open(std::string& error) {
    const int fd = connect_tcp(options_.host, options_.port, options_.connect_timeout_ms, error);
    if (fd < 0) return false;
    TcpConnection::Limits limits;
    limits.max_frame_body_bytes = options_.max_frame_bytes;
    limits.max_output_bytes = options_.max_output_bytes;
    if (options_.tls) {
        limits.tls = {options_.tls,
                      options_.tls_server_name.empty() ? options_.host : options_.tls_server_name,
                      static_cast<uint32_t>(options_.connect_timeout_ms), nullptr};
    }
    connection_ = std::make_unique<TcpConnection>(
        loop_, flusher_, fd, id_, options_.host + ":" + std::to_string(options_.port), accepted_,
        limits, *this);
    connection_->start();
    const wire::LoginRequest login = make_login_request(options_.user, options_.application_id,
                                                        options_.position, options_.password);
    return connection_->send(FrameType::kLoginRequest, login);
}

void Session::close(CloseReason reason, const std::string& text) {
    if (connection_) connection_->close(reason, text);
}

bool Session::send(FrameType type, const google::protobuf::MessageLite& message) {
    return connection_ && connection_->send(type, message);
}

bool Session::send_frame(std::span<const uint8_t> frame) {
    return connection_ && connection_->send_frame(frame);
}

void Session::on_frame(TcpConnection& connection, const proto::Frame& frame) {
    switch (frame.type) {
        case FrameType::kLoginResponse:
            return on_login_response(frame);
        case FrameType::kPing:
            return answer_ping(connection, frame);
        case FrameType::kPong:
            return;
        case FrameType::kClose: {
            wire::Close close;
            close.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()));
            // The peer told us why; close without answering.
            connection.close(
                CloseReason::kPeerClosed,
                "peer closed: " +
                    std::string(close_reason_name(close_reason_from_wire(close.reason()))) + ": " +
                    close.text());
            return;
        }
        default:
            if (!logged_in_) {
                return connection.close(CloseReason::kProtocolError, "data before login response");
            }
            listener_.on_session_frame(*this, frame);
    }
}

void Session::on_login_response(const proto::Frame& frame) {
    wire::LoginResponse response;
    if (!response.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) {
        return connection_->close(CloseReason::kProtocolError, "malformed login response");
    }
    if (!response.accepted()) {
        return connection_->close(CloseReason::kAuthFailed,
                                  "login refused: " + response.status().text());
    }
    logged_in_ = true;
    server_id_ = response.server_id();
    uint32_t interval = options_.ping_interval_ms;
    if (interval == 0) interval = response.heartbeat_interval_ms();
    if (interval > 0) ping_timer_.start_periodic(std::chrono::milliseconds(interval));
    listener_.on_logged_in(*this, response);
}

void Session::send_ping() {
    if (!is_open()) return ping_timer_.stop();
    wire::Ping ping;
    ping.set_sent_time_ns(static_cast<uint64_t>(realtime_ns()));
    send(FrameType::kPing, ping);
}

void Session::on_closed(TcpConnection&, CloseReason reason, const std::string& text) {
    ping_timer_.stop();
    logged_in_ = false;
    listener_.on_session_closed(*this, reason, text);
}

}  // namespace mdcast::sdk
