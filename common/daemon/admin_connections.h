// The admin endpoint's connections, bounded in number and in lifetime.
//
// evhttp owns them and has no hook for either bound, but it asks us for each
// new connection's bufferevent (evhttp_set_bevcb). We make it and keep a
// reference, so it outlives evhttp's use of it: evhttp frees a connection's
// bufferevent by clearing its callbacks and dropping its reference, which the
// sweep (every kSweepMs) sees; then ours goes too and the descriptor closes
// (evhttp has already shut the socket down). A connection older than
// `request_timeout_ms` (one trickling a request a byte at a time, or idle
// between keep-alive requests) is ended as if its read had timed out, and
// evhttp frees it; one that arrives while `max_connections` are open is
// refused (its request, if it completes first, is answered 503) and ended at
// the next sweep. Either costs the endpoint a descriptor for a bounded time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "common/logging.h"
#include "common/net/event_loop.h"

struct bufferevent;
struct event_base;
struct evhttp;

namespace mdcast {

class AdminConnections {
  public:
    static constexpr int kSweepMs = 100;

    AdminConnections(EventLoop& loop, size_t max_connections, uint32_t request_timeout_ms);
    // After evhttp_free: the references still held go.
    ~AdminConnections();
    AdminConnections(const AdminConnections&) = delete;
    AdminConnections& operator=(const AdminConnections&) = delete;

    // Makes `http` take its connections' bufferevents from us.
    void attach(evhttp* http);
    // The connection came in beyond max_connections (its request must be refused).
    bool over_limit(bufferevent* bev) const;

    size_t open() const { return live_.size(); }
    uint64_t refused() const { return refused_; }
    uint64_t timed_out() const { return timed_out_; }

  private:
    struct Live {
        int64_t deadline_ns;
        bool over_limit;
        bool ended;
    };
    static bufferevent* on_new(event_base* base, void* self);
    void admit(bufferevent* bev);
    void release_freed();
    void sweep();

    size_t max_connections_;
    int64_t timeout_ns_;
    std::unordered_map<bufferevent*, Live> live_;
    Timer sweeper_;
    uint64_t refused_ = 0;
    uint64_t timed_out_ = 0;
    log::RateLimiter log_limit_;
};

}  // namespace mdcast
