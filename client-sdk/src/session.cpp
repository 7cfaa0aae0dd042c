#include "mdcast/session.h"

#include "common/logging.h"
#include "server_link.h"

namespace mdcast::sdk {

namespace {

// What the tools are told when a link goes down: the reason its connection
// closed for, or a read error when it never connected.
CloseReason close_reason_for(LinkDown cause, std::optional<CloseReason> closed) {
    if (cause == LinkDown::kServerShutdown) return CloseReason::kPeerClosed;
    if (cause == LinkDown::kHeartbeatTimeout) return CloseReason::kIdleTimeout;
    return closed.value_or(CloseReason::kReadError);
}

}  // namespace

class Session::Link final : public ServerLink::Listener {
  public:
    Link(Session& session, EventLoop& loop, FlushScheduler& flusher, proto::FrameTypeSet accepted)
        : session_(session), link(loop, flusher, accepted, *this, log::get("session")) {}

    void on_link_up(const wire::v1::LoginResponse& response) override {
        session_.logged_in_ = true;
        session_.server_id_ = response.server_id();
        session_.listener_.on_logged_in(session_, response);
    }
    void on_link_frame(const proto::Frame& frame) override {
        session_.listener_.on_session_frame(session_, frame);
    }
    void on_link_down(LinkDown cause, const std::string& text) override {
        session_.ended(close_reason_for(cause, link.last_close_reason()), text);
    }

  private:
    Session& session_;

  public:
    ServerLink link;  // after session_: it may call back as soon as it is opened
};

Session::Session(EventLoop& loop, FlushScheduler& flusher, SessionOptions options,
                 proto::FrameTypeSet accepted, Listener& listener, uint64_t id)
    : options_(std::move(options)),
      listener_(listener),
      id_(id),
      link_(std::make_unique<Link>(*this, loop, flusher, accepted)) {}

Session::~Session() = default;

bool Session::open(std::string& error) {
    if (options_.port == 0) {
        error = "no port to connect to on " + options_.host;
        return false;
    }
    LinkSettings settings;
    settings.server = {options_.host, options_.port};
    settings.user = options_.user;
    settings.application_id = options_.application_id;
    settings.position = options_.position;
    settings.password = options_.password;
    settings.connect_timeout_ms = static_cast<uint32_t>(options_.connect_timeout_ms);
    settings.login_timeout_ms = static_cast<uint32_t>(options_.login_timeout_ms);
    settings.heartbeat_interval_ms = options_.ping_interval_ms;
    settings.heartbeat_timeout_ms = 0;  // a tool measures a silent peer; it does not leave it
    settings.max_frame_bytes = options_.max_frame_bytes;
    settings.max_output_bytes = options_.max_output_bytes;
    settings.tls = options_.tls;
    settings.tls_server_name =
        options_.tls_server_name.empty() ? options_.host : options_.tls_server_name;
    open_ = true;
    link_->link.open(settings);
    return true;
}

void Session::close(CloseReason reason, const std::string& text) {
    if (!open_) return;
    link_->link.close(reason, text);  // reports nothing: the session does
    ended(reason, text);
}

void Session::ended(CloseReason reason, const std::string& text) {
    open_ = false;
    logged_in_ = false;
    listener_.on_session_closed(*this, reason, text);
}

bool Session::send(proto::FrameType type, const google::protobuf::MessageLite& message) {
    return link_->link.send(type, message);
}

bool Session::send_frame(std::span<const uint8_t> frame) {
    return link_->link.send_frame(frame);
}

size_t Session::queued_bytes() const {
    return link_->link.queued_bytes();
}

void Session::flush() {
    link_->link.flush();
}

}  // namespace mdcast::sdk
