#include "server_link.h"

#include <event2/event.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/clock.h"
#include "session_messages.h"

namespace mdcast::sdk {

using proto::FrameType;
namespace wire = mdcast::wire::v1;

std::string_view link_down_name(LinkDown cause) {
    switch (cause) {
        case LinkDown::kConnectFailed:
            return "connect_failed";
        case LinkDown::kLoginFailed:
            return "login_failed";
        case LinkDown::kLoginRefused:
            return "login_refused";
        case LinkDown::kHeartbeatTimeout:
            return "heartbeat_timeout";
        case LinkDown::kServerShutdown:
            return "server_shutdown";
        case LinkDown::kLost:
            return "connection_lost";
        case LinkDown::kProtocolError:
            return "protocol_error";
    }
    return "unknown";
}

namespace {

// Starts a non-blocking connect. Returns the socket (connecting or connected)
// or -1 with `error` set.
int start_connect(const ServerAddress& server, std::string& error) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(server.port);
    if (const int rc = getaddrinfo(server.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
        error = "cannot resolve " + server.host + ": " + gai_strerror(rc);
        return -1;
    }
    int fd = -1;
    error = "no address for " + server.host;
    for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            error = std::string("socket: ") + std::strerror(errno);
            continue;
        }
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS) break;
        error = std::string("connect: ") + std::strerror(errno);
        ::close(fd);
        fd = -1;
    }
    freeaddrinfo(found);
    return fd;
}

timeval to_timeval(uint32_t ms) {
    return timeval{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)};
}

}  // namespace

ServerLink::ServerLink(EventLoop& loop, FlushScheduler& flusher, proto::FrameTypeSet accepted,
                       Listener& listener, std::shared_ptr<spdlog::logger> log)
    : loop_(loop),
      flusher_(flusher),
      accepted_(accepted),
      listener_(listener),
      log_(std::move(log)),
      reaper_(loop, [this] { retired_.clear(); }),
      login_timer_(loop,
                   [this] {
                       cause_set_ = true;
                       if (connection_->tls_handshaking()) {
                           pending_cause_ = LinkDown::kConnectFailed;
                           return connection_->close(CloseReason::kTlsHandshakeTimeout,
                                                     "no TLS handshake within login_timeout_ms");
                       }
                       pending_cause_ = LinkDown::kLoginFailed;
                       connection_->close(CloseReason::kAuthFailed, "no login response in time");
                   }),
      tick_timer_(loop, [this] { on_tick(); }),
      failure_timer_(loop, [this] { report_failure(); }) {}

ServerLink::~ServerLink() {
    close(CloseReason::kShutdown, "client going away");
    retired_.clear();
}

void ServerLink::open(const LinkSettings& settings) {
    close(CloseReason::kShutdown, "reconnecting");
    settings_ = settings;
    reporting_ = true;
    cause_set_ = false;
    last_close_reason_.reset();
    peer_close_ = {};
    std::string error;
    const int fd = start_connect(settings_.server, error);
    if (fd < 0) return fail_later(LinkDown::kConnectFailed, error);
    connecting_fd_ = fd;
    connect_event_ = event_new(loop_.base(), fd, EV_WRITE, &on_connect_ready, this);
    const timeval timeout = to_timeval(settings_.connect_timeout_ms);
    event_add(connect_event_, &timeout);
}

void ServerLink::fail_later(LinkDown cause, const std::string& text) {
    pending_cause_ = cause;
    pending_text_ = text;
    failure_timer_.start_once(std::chrono::microseconds(0));
}

void ServerLink::report_failure() {
    if (!reporting_) return;
    reporting_ = false;
    listener_.on_link_down(pending_cause_, pending_text_);
}

void ServerLink::on_connect_ready(int fd, short what, void* self) {
    auto* link = static_cast<ServerLink*>(self);
    const EventLoop::CallbackScope scope(link->loop_);
    event_free(link->connect_event_);
    link->connect_event_ = nullptr;
    link->connecting_fd_ = -1;
    int error = 0;
    socklen_t length = sizeof error;
    if ((what & EV_TIMEOUT) != 0) {
        error = ETIMEDOUT;
    } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) {
        error = errno;
    }
    if (error != 0) {
        ::close(fd);
        link->pending_cause_ = LinkDown::kConnectFailed;
        link->pending_text_ =
            "connect to " + link->settings_.server.to_string() + ": " + std::strerror(error);
        return link->report_failure();
    }
    link->connected(fd);
}

void ServerLink::connected(int fd) {
    TcpConnection::Limits limits;
    limits.max_frame_body_bytes = settings_.max_frame_bytes;
    limits.max_output_bytes = settings_.max_output_bytes;
    if (settings_.tls) {
        // The login waits in the queue until the handshake is done; both are
        // bounded by login_timeout_ms.
        limits.tls = {settings_.tls, settings_.tls_server_name, settings_.login_timeout_ms,
                      nullptr};
        if (!settings_.tls->verifies_peer()) {
            log_->warn(
                "{}: TLS without certificate verification (tls.insecure_skip_verify): the server "
                "is "
                "not authenticated",
                settings_.server.to_string());
        }
    }
    connection_ = std::make_unique<TcpConnection>(
        loop_, flusher_, fd, 0, settings_.server.to_string(), accepted_, limits, *this);
    connection_->start();
    wire::LoginRequest login = make_login_request(settings_.user, settings_.application_id,
                                                  settings_.position, settings_.password);
    login.set_group_status(settings_.group_status);
    connection_->send(FrameType::kLoginRequest, login);
    login_timer_.start_once(std::chrono::milliseconds(settings_.login_timeout_ms));
}

void ServerLink::close(CloseReason reason, const std::string& text) {
    reporting_ = false;
    failure_timer_.stop();
    login_timer_.stop();
    tick_timer_.stop();
    if (connect_event_) {
        event_free(connect_event_);
        connect_event_ = nullptr;
        ::close(connecting_fd_);
        connecting_fd_ = -1;
    }
    if (connection_ && connection_->is_open()) connection_->close(reason, text);
    retire_connection();
}

void ServerLink::abort(const std::string& text) {
    if (!connection_ || !connection_->is_open()) return;
    pending_cause_ = LinkDown::kProtocolError;
    cause_set_ = true;
    connection_->close(CloseReason::kProtocolError, text);
}

void ServerLink::retire_connection() {
    up_ = false;
    if (!connection_) return;
    retired_.push_back(std::move(connection_));
    reaper_.fire();  // never destroyed inside its own callback
}

bool ServerLink::send(FrameType type, const google::protobuf::MessageLite& message) {
    return up_ && connection_->send(type, message);
}

bool ServerLink::send_frame(std::span<const uint8_t> frame) {
    return up_ && connection_->send_frame(frame);
}

int64_t ServerLink::last_input_ns() const {
    return connection_ ? connection_->last_input_ns() : monotonic_ns();
}

size_t ServerLink::queued_bytes() const {
    return connection_ ? connection_->queued_bytes() : 0;
}

void ServerLink::flush() {
    if (connection_ && connection_->is_open()) connection_->flush();
}

TcpConnection::DirectWrite ServerLink::write_now(std::span<const uint8_t> bytes) {
    if (!up_) return TcpConnection::DirectWrite::kRefused;
    return connection_->write_now(bytes);
}

void ServerLink::on_frame(TcpConnection& connection, const proto::Frame& frame) {
    switch (frame.type) {
        case FrameType::kLoginResponse:
            return on_login_response(frame);
        case FrameType::kPing:
            return answer_ping(connection, frame);
        case FrameType::kPong:
            return;
        case FrameType::kClose:
            return on_peer_close(frame);
        default:
            if (!up_) {
                return connection.close(CloseReason::kProtocolError, "data before login response");
            }
            listener_.on_link_frame(frame);
    }
}

void ServerLink::on_login_response(const proto::Frame& frame) {
    wire::LoginResponse response;
    if (up_ || !response.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) {
        return connection_->close(CloseReason::kProtocolError,
                                  "malformed or second login response");
    }
    login_timer_.stop();
    if (!response.accepted()) {
        pending_cause_ = LinkDown::kLoginRefused;
        cause_set_ = true;
        return connection_->close(CloseReason::kAuthFailed,
                                  "login refused: " + response.status().text());
    }
    up_ = true;
    peer_id_ = response.server_id();
    max_items_per_request_ = response.max_items_per_request();
    peer_max_frame_bytes_ = response.max_frame_bytes();
    ping_interval_ms_ = settings_.heartbeat_interval_ms;
    if (response.heartbeat_interval_ms() > 0) {
        ping_interval_ms_ = ping_interval_ms_ == 0
                                ? response.heartbeat_interval_ms()
                                : std::min(ping_interval_ms_, response.heartbeat_interval_ms());
    }
    uint32_t tick_ms = ping_interval_ms_ > 0 ? ping_interval_ms_ : 1000;
    // Fine enough that silence is declared within a tenth of the timeout of it.
    if (settings_.heartbeat_timeout_ms > 0)
        tick_ms = std::min(tick_ms, settings_.heartbeat_timeout_ms / 10);
    tick_timer_.start_periodic(std::chrono::milliseconds(std::max<uint32_t>(tick_ms, 5)));
    last_ping_ns_ = monotonic_ns();
    listener_.on_link_up(response);
}

void ServerLink::on_peer_close(const proto::Frame& frame) {
    wire::Close close;
    close.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()));
    pending_cause_ =
        close.reason() == wire::CLOSE_SHUTDOWN ? LinkDown::kServerShutdown : LinkDown::kLost;
    cause_set_ = true;
    peer_close_ = {std::string(close_reason_name(close_reason_from_wire(close.reason()))),
                   close.text()};
    connection_->close(CloseReason::kPeerClosed,
                       "closed by " + settings_.server.to_string() + ": " + peer_close_.reason +
                           (close.text().empty() ? "" : ": " + close.text()));
}

void ServerLink::on_tick() {
    if (!connection_ || !connection_->is_open()) return tick_timer_.stop();
    const int64_t now = monotonic_ns();
    const int64_t silent_ms = (now - connection_->last_input_ns()) / 1'000'000;
    if (settings_.heartbeat_timeout_ms > 0 && silent_ms >= settings_.heartbeat_timeout_ms) {
        pending_cause_ = LinkDown::kHeartbeatTimeout;
        cause_set_ = true;
        return connection_->close(CloseReason::kIdleTimeout,
                                  "nothing heard from " + settings_.server.to_string() + " for " +
                                      std::to_string(silent_ms) + " ms");
    }
    if (ping_interval_ms_ > 0 && now - last_ping_ns_ >= int64_t{ping_interval_ms_} * 1'000'000) {
        last_ping_ns_ = now;
        wire::Ping ping;
        ping.set_sent_time_ns(static_cast<uint64_t>(realtime_ns()));
        connection_->send(FrameType::kPing, ping);
    }
}

void ServerLink::on_closed(TcpConnection&, CloseReason reason, const std::string& text) {
    last_close_reason_ = reason;
    login_timer_.stop();
    tick_timer_.stop();
    const bool was_up = up_;
    retire_connection();
    if (!reporting_) return;
    reporting_ = false;
    LinkDown cause = pending_cause_;
    if (!cause_set_) {
        cause = reason == CloseReason::kProtocolError || reason == CloseReason::kFrameTooLarge
                    ? LinkDown::kProtocolError
                    : (was_up ? LinkDown::kLost : LinkDown::kLoginFailed);
        if (is_tls_handshake_failure(reason))
            cause = LinkDown::kConnectFailed;  // wrong CA, name, certificate
    }
    log_->log(was_up ? spdlog::level::warn : spdlog::level::info, "{} {}: {}: {}",
              settings_.server.to_string(), was_up ? "lost" : "failed", link_down_name(cause),
              text);
    listener_.on_link_down(cause, std::string(close_reason_name(reason)) + ": " + text);
}

}  // namespace mdcast::sdk
