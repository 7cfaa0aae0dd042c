// mdcast client SDK: a logged-in session with a server or a distributor, run on
// the caller's event loop.
//
// This is the transport layer the tools (mdcast-client, mdcast-source) are
// built on: connect, log in, keep the connection alive with pings, and hand
// every data frame to the Listener. Threading: everything happens on the loop's
// thread; no call is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/net/event_loop.h"
#include "common/net/flush_scheduler.h"
#include "common/net/tcp_connection.h"
#include "wire/session.pb.h"

namespace mdcast::sdk {

struct SessionOptions {
    std::string host = "127.0.0.1";
    uint16_t port = 0;
    std::string user = "mdcast";
    std::string application_id = "mdcast-sdk";
    std::string position;  // defaults to the host name
    std::string password;  // checked when the peer has authentication on
    int connect_timeout_ms = 5000;
    uint32_t max_frame_bytes = 16 << 20;
    uint64_t max_output_bytes = 64 << 20;
    uint32_t ping_interval_ms = 0;  // 0: use the interval the peer asks for at login
    // TLS: the context to connect with (null: plaintext). The peer's
    // certificate must name tls_server_name (empty: host) unless the context
    // was built with insecure_skip_verify.
    std::shared_ptr<const TlsContext> tls;
    std::string tls_server_name;
};

class Session final : public TcpConnection::Handler {
  public:
    class Listener {
      public:
        virtual void on_logged_in(Session& session, const wire::v1::LoginResponse& response) = 0;
        // Every frame other than login response, ping, pong and close.
        virtual void on_session_frame(Session& session, const proto::Frame& frame) = 0;
        virtual void on_session_closed(Session& session, CloseReason reason,
                                       const std::string& text) = 0;

      protected:
        virtual ~Listener() = default;
    };

    // `accepted`: the frame types this side takes from the peer.
    Session(EventLoop& loop, FlushScheduler& flusher, SessionOptions options,
            proto::FrameTypeSet accepted, Listener& listener, uint64_t id = 0);
    ~Session();

    // Connects (blocking, bounded by connect_timeout_ms) and sends the login.
    // Returns false with `error` set when the connection cannot be made.
    bool open(std::string& error);
    void close(CloseReason reason, const std::string& text);

    bool send(proto::FrameType type, const google::protobuf::MessageLite& message);
    bool send_frame(std::span<const uint8_t> frame);

    bool is_open() const { return connection_ && connection_->is_open(); }
    bool logged_in() const { return logged_in_; }
    const SessionOptions& options() const { return options_; }
    const std::string& server_id() const { return server_id_; }
    TcpConnection* connection() { return connection_.get(); }

    void on_frame(TcpConnection& connection, const proto::Frame& frame) override;
    void on_closed(TcpConnection& connection, CloseReason reason, const std::string& text) override;

  private:
    void on_login_response(const proto::Frame& frame);
    void send_ping();

    EventLoop& loop_;
    FlushScheduler& flusher_;
    SessionOptions options_;
    proto::FrameTypeSet accepted_;
    Listener& listener_;
    uint64_t id_;
    std::unique_ptr<TcpConnection> connection_;
    Timer ping_timer_;
    bool logged_in_ = false;
    std::string server_id_;
};

}  // namespace mdcast::sdk
