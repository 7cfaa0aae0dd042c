// mdcast client SDK: a logged-in session with a server or a distributor, run on
// the caller's event loop, for the tools (mdcast-client, mdcast-source).
//
// The connection itself is the SDK's own link (src/server_link.h: connect with
// a timeout, login, login timeout, pings, the peer's Close), so the tools and
// the Consumer/Publisher speak to a peer through the same code. A session has
// no failover: when it closes the tool decides what to do. Threading:
// everything happens on the loop's thread; no call is thread-safe. Not
// installed: applications use Consumer and Publisher.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/net/close_reason.h"
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
    int login_timeout_ms = 10000;  // from connected to the login answer (TLS handshake included)
    uint32_t max_frame_bytes = 16 << 20;
    uint64_t max_output_bytes = 64 << 20;
    uint32_t ping_interval_ms = 0;  // 0: use the interval the peer asks for at login
    // TLS: the context to connect with (null: plaintext). The peer's
    // certificate must name tls_server_name (empty: host) unless the context
    // was built with insecure_skip_verify.
    std::shared_ptr<const TlsContext> tls;
    std::string tls_server_name;
};

class Session final {
  public:
    class Listener {
      public:
        virtual void on_logged_in(Session& session, const wire::v1::LoginResponse& response) = 0;
        // Every frame other than login response, ping, pong and close.
        virtual void on_session_frame(Session& session, const proto::Frame& frame) = 0;
        // Once per open(): the connect or login failed, or the session ended
        // (the peer closed, an error, or close() was called).
        virtual void on_session_closed(Session& session, CloseReason reason,
                                       const std::string& text) = 0;

      protected:
        virtual ~Listener() = default;
    };

    // `accepted`: the frame types this side takes from the peer. `id` names the
    // session to its listener (e.g. the tool's connection index).
    Session(EventLoop& loop, FlushScheduler& flusher, SessionOptions options,
            proto::FrameTypeSet accepted, Listener& listener, uint64_t id = 0);
    ~Session();

    // Starts connecting and logging in; the listener hears how it went. False
    // with `error` set only when the options cannot work (no port).
    bool open(std::string& error);
    // Closes (the peer is told `reason` when it has a wire code) and reports it.
    void close(CloseReason reason, const std::string& text);

    bool send(proto::FrameType type, const google::protobuf::MessageLite& message);
    bool send_frame(std::span<const uint8_t> frame);
    // Output not yet written, and a write of it now (a tool draining before it exits).
    size_t queued_bytes() const;
    void flush();

    bool is_open() const { return open_; }  // from open() until closed
    bool logged_in() const { return logged_in_; }
    const SessionOptions& options() const { return options_; }
    const std::string& server_id() const { return server_id_; }
    uint64_t id() const { return id_; }
    std::string peer() const { return options_.host + ":" + std::to_string(options_.port); }

  private:
    class Link;  // the SDK link and its listener
    void ended(CloseReason reason, const std::string& text);

    SessionOptions options_;
    Listener& listener_;
    uint64_t id_;
    std::unique_ptr<Link> link_;
    bool open_ = false;
    bool logged_in_ = false;
    std::string server_id_;
};

}  // namespace mdcast::sdk
