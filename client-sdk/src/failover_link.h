// How the Consumer and the Publisher stay connected: one ServerLink to one
// peer of their failover list at a time, the next attempt chosen by the
// ReconnectPolicy (the next peer at once after a stable session, a growing
// back-off after failures, the longest after a refused login), the connection
// events the application sees and the connection counters. The owner handles
// what a session carries and what it must forget when one ends.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/logging.h"
#include "common/net/event_loop.h"
#include "mdcast/types.h"
#include "reconnect_policy.h"
#include "server_link.h"

namespace mdcast::sdk {

// The connection counters the Consumer's and the Publisher's stats() share.
struct LinkCounters {
    std::atomic<uint64_t> connections{0};        // sessions logged in
    std::atomic<uint64_t> connection_losses{0};  // logged-in sessions lost
};

class FailoverLink final : public ServerLink::Listener {
  public:
    class Owner {
      public:
        // Logged in (the Up event has been delivered): ask again for what is wanted.
        virtual void on_session_up(const wire::v1::LoginResponse& response) = 0;
        virtual void on_session_frame(const proto::Frame& frame) = 0;
        // The link went down (`was_up`: a session had logged in). The owner
        // forgets what belonged to it and says whether to go on (false: it is
        // stopping; no event, no further attempt).
        virtual bool on_session_down(bool was_up, LinkDown cause) = 0;
        // After the Down event, before the next attempt is scheduled.
        virtual void on_failing_over(bool was_up, LinkDown cause) = 0;
        virtual void on_connection_event(const ConnectionEvent& event) = 0;

      protected:
        ~Owner() = default;
    };
    // `settings_for` makes the link settings for one peer of `peers`.
    FailoverLink(EventLoop& loop, FlushScheduler& flusher, proto::FrameTypeSet accepted,
                 const std::vector<ServerAddress>& peers, const ReconnectSettings& reconnect,
                 std::function<LinkSettings(const ServerAddress&)> settings_for, Owner& owner,
                 LinkCounters& counters, std::shared_ptr<spdlog::logger> log);

    void start();  // the first peer, at once
    void stop();   // no further attempt; the owner closes the link
    ServerLink& link() { return link_; }
    const ServerAddress& peer() const { return peers_[attempt_.server]; }
    ConnectionEvent event(ConnectionState state, const std::string& text) const;

    void on_link_up(const wire::v1::LoginResponse& response) override;
    void on_link_frame(const proto::Frame& frame) override { owner_.on_session_frame(frame); }
    void on_link_down(LinkDown cause, const std::string& text) override;

  private:
    void connect();

    const std::vector<ServerAddress>& peers_;
    std::function<LinkSettings(const ServerAddress&)> settings_for_;
    Owner& owner_;
    LinkCounters& counters_;
    std::shared_ptr<spdlog::logger> log_;
    ServerLink link_;
    ReconnectPolicy policy_;
    ReconnectPolicy::Attempt attempt_;
    Timer reconnect_timer_;
    bool live_ = false;          // a session is logged in
    int64_t live_since_ns_ = 0;  // when: a session lost soon after backs off
    bool stopped_ = false;
};

}  // namespace mdcast::sdk
