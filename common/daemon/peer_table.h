#pragma once
// The peers a daemon serves on one kind of connection (a server's clients, a
// distributor's publishers) and the lifecycle both daemons share: an id per
// connection, a limit on how many, removal only after the close callbacks
// have returned (never inside a fan-out or a session's own callback), close
// counts by reason, and the graceful shutdown that tells every peer, waits
// up to a grace period for their queued output, then cuts off the rest.
//
// Session needs attach(unique_ptr<TcpConnection>) and connection().
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/net/close_reason.h"
#include "common/net/event_loop.h"
#include "common/net/tcp_connection.h"

namespace mdcast {

template <class Session>
class PeerTable {
  public:
    using Map = std::unordered_map<uint64_t, std::unique_ptr<Session>>;
    struct Hooks {
        // Called for each closed session just before it is destroyed.
        std::function<void(Session&)> before_erase;
        // The shutdown is over: why, and how many peers were cut off with output unsent.
        std::function<void(const std::string& why, size_t cut_off)> finished;
    };

    // `noun` names a peer in messages ("client"); `shutdown_text` is what a
    // peer is told when the daemon stops ("server shutting down").
    PeerTable(EventLoop& loop, std::string noun, std::string shutdown_text, Hooks hooks)
        : noun_(std::move(noun)),
          shutdown_text_(std::move(shutdown_text)),
          hooks_(std::move(hooks)),
          reaper_(loop, [this] { reap(); }),
          grace_timer_(loop, [this] { finish("grace period over"); }) {}

    uint64_t next_id() { return next_id_++; }

    // Takes the session of a newly accepted connection (made with the session
    // as its handler). Beyond `max` peers, or while shutting down, it is closed
    // at once with the reason (`limit_key` names the setting) and counted as
    // refused; it is reaped like any other. `attach_args` go to the session's
    // attach() after the connection. Returns whether it was admitted.
    template <class... AttachArgs>
    bool admit(std::unique_ptr<Session> session, std::unique_ptr<TcpConnection> connection,
               size_t max, const std::string& limit_key, AttachArgs&&... attach_args) {
        Session* raw = session.get();
        const uint64_t id = connection->id();
        sessions_[id] = std::move(session);
        raw->attach(std::move(connection), std::forward<AttachArgs>(attach_args)...);
        if (shutting_down_ || sessions_.size() > max) {
            ++refused_;
            if (shutting_down_) {
                raw->connection().close(CloseReason::kShutdown, shutdown_text_);
            } else {
                raw->connection().close(CloseReason::kLimitReached,
                                        limit_key + " (" + std::to_string(max) + ") reached");
            }
            return false;
        }
        ++accepted_;
        return true;
    }

    // A session's connection closed: counted now, destroyed after the callbacks.
    void on_closed(const Session& session, CloseReason reason) {
        ++closes_[static_cast<size_t>(reason)];
        closed_.push_back(session.connection().id());
        reaper_.fire();
    }

    // Tells every open peer the daemon is stopping (behind its queued output)
    // and starts the grace period. A second call (a second SIGTERM) cuts off
    // at once. Nobody connected: finished at once.
    void begin_shutdown(const std::string& why, std::chrono::milliseconds grace) {
        if (shutting_down_) return finish("second " + why);
        shutting_down_ = true;
        for (auto& [id, session] : sessions_) {
            if (session->connection().is_open())
                session->connection().close_after_flush(CloseReason::kShutdown, shutdown_text_);
        }
        grace_timer_.start_once(grace);
        reaper_.fire();
    }

    Session* find(uint64_t id) const {
        const auto it = sessions_.find(id);
        return it == sessions_.end() ? nullptr : it->second.get();
    }
    typename Map::iterator begin() { return sessions_.begin(); }
    typename Map::iterator end() { return sessions_.end(); }
    typename Map::const_iterator begin() const { return sessions_.begin(); }
    typename Map::const_iterator end() const { return sessions_.end(); }
    size_t size() const { return sessions_.size(); }
    size_t open_count() const {
        size_t open = 0;
        for (const auto& [id, session] : sessions_) open += session->connection().is_open();
        return open;
    }

    bool shutting_down() const { return shutting_down_; }
    bool stopped() const { return stopped_; }
    uint64_t accepted() const { return accepted_; }
    uint64_t refused() const { return refused_; }
    uint64_t closes(size_t reason) const { return closes_[reason]; }

  private:
    void reap() {
        for (uint64_t id : closed_) {
            const auto it = sessions_.find(id);
            if (it == sessions_.end()) continue;
            if (hooks_.before_erase) hooks_.before_erase(*it->second);
            sessions_.erase(it);
        }
        closed_.clear();
        if (shutting_down_ && sessions_.empty()) finish("every " + noun_ + " closed");
    }

    // Peers still being written to are cut off.
    void finish(const std::string& why) {
        if (stopped_) return;
        stopped_ = true;
        grace_timer_.stop();
        size_t cut = 0;
        for (auto& [id, session] : sessions_) {
            if (!session->connection().is_open()) continue;
            ++cut;
            session->connection().close(CloseReason::kShutdown, shutdown_text_);
        }
        hooks_.finished(why, cut);
    }

    std::string noun_;
    std::string shutdown_text_;
    Hooks hooks_;
    Map sessions_;
    std::vector<uint64_t> closed_;
    Trigger reaper_;
    Timer grace_timer_;
    uint64_t next_id_ = 1;
    uint64_t accepted_ = 0;
    uint64_t refused_ = 0;
    std::array<uint64_t, kCloseReasonCount> closes_{};
    bool shutting_down_ = false;
    bool stopped_ = false;
};

}  // namespace mdcast
