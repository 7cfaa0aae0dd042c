// One logged-in connection of the SDK to a server or a distributor, on the
// I/O thread's loop: non-blocking connect with a timeout, login, login
// timeout, pings and a liveness check, and the peer's Close.
//
// Contract: open() starts an attempt; exactly one of on_link_up() or
// on_link_down() follows, and after on_link_up() exactly one on_link_down(),
// unless close() is called first (close() reports nothing). Callbacks never
// run inside open() or close(), so the listener may call open() again from
// on_link_down(). Frames are handed over only while the link is up.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/logging.h"
#include "common/net/event_loop.h"
#include "common/net/flush_scheduler.h"
#include "common/net/tcp_connection.h"
#include "mdcast/types.h"
#include "wire/session.pb.h"

struct event;

namespace mdcast::sdk {

struct LinkSettings {
    ServerAddress server;
    std::string user;
    std::string application_id;
    std::string position;  // empty: the host name
    std::string password;
    uint32_t connect_timeout_ms = 2000;
    uint32_t login_timeout_ms = 3000;
    uint32_t heartbeat_interval_ms = 1000;  // 0: the peer's interval
    uint32_t heartbeat_timeout_ms = 3000;   // 0: never declared dead for silence
    uint32_t max_frame_bytes = 16u << 20;
    uint64_t max_output_bytes = 16u << 20;
    std::shared_ptr<const TlsContext> tls;  // null: plaintext
    std::string tls_server_name;            // what the certificate must name
    bool group_status = false;  // the owner expands GroupStatus frames (LoginRequest.group_status)
};

// Why a link went down; the consumer turns it into an item status code.
enum class LinkDown {
    kConnectFailed,     // refused, unreachable, timed out
    kLoginFailed,       // no answer within login_timeout_ms, or closed before one
    kLoginRefused,      // the peer said no (wrong credentials, rate limit): back off longer
    kHeartbeatTimeout,  // nothing heard for heartbeat_timeout_ms
    kServerShutdown,    // the peer closed with reason `shutdown`
    kLost,              // closed by the peer (other reason) or a socket error
    kProtocolError,     // the peer broke the protocol
};

std::string_view link_down_name(LinkDown cause);

class ServerLink final : public TcpConnection::Handler {
  public:
    class Listener {
      public:
        virtual void on_link_up(const wire::v1::LoginResponse& response) = 0;
        virtual void on_link_frame(const proto::Frame& frame) = 0;
        virtual void on_link_down(LinkDown cause, const std::string& text) = 0;

      protected:
        virtual ~Listener() = default;
    };

    ServerLink(EventLoop& loop, FlushScheduler& flusher, proto::FrameTypeSet accepted,
               Listener& listener, std::shared_ptr<spdlog::logger> log);
    ~ServerLink();

    void open(const LinkSettings& settings);
    // Closes without reporting: `reason` goes to the peer when it has a wire code.
    void close(CloseReason reason, const std::string& text);
    // Closes because the peer broke the protocol, and reports it (kProtocolError).
    void abort(const std::string& text);

    bool up() const { return up_; }
    bool send(proto::FrameType type, const google::protobuf::MessageLite& message);
    bool send_frame(std::span<const uint8_t> frame);
    size_t queued_bytes() const;
    // CLOCK_MONOTONIC when the connection last read input (now when none is open).
    int64_t last_input_ns() const;
    void flush();  // writes what is queued now, rather than at the end of the loop iteration
    // TcpConnection::write_now on the logged-in connection (kRefused when the
    // link is not up); from another thread only holding the loop's callback lock.
    TcpConnection::DirectWrite write_now(std::span<const uint8_t> bytes);
    // The reason the last connection closed (none: it never connected).
    std::optional<CloseReason> last_close_reason() const { return last_close_reason_; }
    // What the peer's Close message said before the last connection closed:
    // its reason's name ("kicked") and text; both empty when it sent none.
    struct PeerClose {
        std::string reason;
        std::string text;
    };
    const PeerClose& peer_close() const { return peer_close_; }
    const LinkSettings& settings() const { return settings_; }
    const std::string& peer_id() const { return peer_id_; }
    // What the peer's LoginResponse announced (0: nothing).
    uint32_t max_items_per_request() const { return max_items_per_request_; }
    uint32_t peer_max_frame_bytes() const { return peer_max_frame_bytes_; }

    void on_frame(TcpConnection& connection, const proto::Frame& frame) override;
    void on_closed(TcpConnection& connection, CloseReason reason, const std::string& text) override;

  private:
    static void on_connect_ready(int fd, short what, void* self);
    void connected(int fd);
    void fail_later(LinkDown cause, const std::string& text);
    void report_failure();
    void on_login_response(const proto::Frame& frame);
    void on_peer_close(const proto::Frame& frame);
    void on_tick();
    void retire_connection();

    EventLoop& loop_;
    FlushScheduler& flusher_;
    proto::FrameTypeSet accepted_;
    Listener& listener_;
    std::shared_ptr<spdlog::logger> log_;
    LinkSettings settings_;
    int connecting_fd_ = -1;
    event* connect_event_ = nullptr;
    std::unique_ptr<TcpConnection> connection_;
    std::vector<std::unique_ptr<TcpConnection>> retired_;
    Trigger reaper_;
    Timer login_timer_;
    Timer tick_timer_;
    Timer failure_timer_;
    std::optional<CloseReason> last_close_reason_;
    PeerClose peer_close_;
    LinkDown pending_cause_ = LinkDown::kLost;
    std::string pending_text_;
    bool cause_set_ = false;  // a more precise cause than the close reason is known
    bool up_ = false;
    bool reporting_ = false;  // on_closed must report (an attempt or a session is live)
    std::string peer_id_;
    uint32_t max_items_per_request_ = 0;
    uint32_t peer_max_frame_bytes_ = 0;
    uint32_t ping_interval_ms_ = 0;
    int64_t last_ping_ns_ = 0;
};

}  // namespace mdcast::sdk
