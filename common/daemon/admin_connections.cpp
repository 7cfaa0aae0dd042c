#include "common/daemon/admin_connections.h"

#include <event2/bufferevent.h>
#include <event2/http.h>

#include <vector>

#include "common/clock.h"

namespace mdcast {

AdminConnections::AdminConnections(EventLoop& loop, size_t max_connections,
                                   uint32_t request_timeout_ms)
    : max_connections_(max_connections),
      timeout_ns_(int64_t{request_timeout_ms} * 1'000'000),
      sweeper_(loop, [this] { sweep(); }) {}

AdminConnections::~AdminConnections() {
    for (const auto& [bev, live] : live_) bufferevent_decref(bev);
}

void AdminConnections::attach(evhttp* http) {
    evhttp_set_bevcb(http, &AdminConnections::on_new, this);
}

bool AdminConnections::over_limit(bufferevent* bev) const {
    const auto found = live_.find(bev);
    return found != live_.end() && found->second.over_limit;
}

bufferevent* AdminConnections::on_new(event_base* base, void* self) {
    bufferevent* bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!bev) return nullptr;  // evhttp makes its own, unbounded: better than none
    bufferevent_incref(bev);
    static_cast<AdminConnections*>(self)->admit(bev);
    return bev;
}

void AdminConnections::admit(bufferevent* bev) {
    release_freed();  // a caller's previous connection, just closed, is not counted
    const bool over = live_.size() >= max_connections_;
    const int64_t now = monotonic_ns();
    live_[bev] = {over ? now : now + timeout_ns_, over, false};
    if (!sweeper_.pending()) sweeper_.start_periodic(std::chrono::milliseconds(kSweepMs));
    if (!over) return;
    ++refused_;
    uint64_t suppressed = 0;
    if (log_limit_.allow(suppressed)) {
        log::get("admin")->warn(
            "admin http: admin.max_connections ({}) open: a new connection is refused{}",
            max_connections_, suppressed ? fmt::format(" ({} more not logged)", suppressed) : "");
    }
}

// Connections evhttp freed (bufferevent_free clears the callbacks) lose our
// reference too, and with it their descriptor.
void AdminConnections::release_freed() {
    for (auto it = live_.begin(); it != live_.end();) {
        bufferevent_event_cb on_event = nullptr;
        bufferevent_getcb(it->first, nullptr, nullptr, &on_event, nullptr);
        if (on_event) {
            ++it;
            continue;
        }
        bufferevent_decref(it->first);
        it = live_.erase(it);
    }
}

// Connections past their deadline are ended as a read timeout: evhttp fails
// the request in progress and frees the connection, and the next sweep sees it.
void AdminConnections::sweep() {
    release_freed();
    const int64_t now = monotonic_ns();
    std::vector<bufferevent*> expired;
    size_t late = 0;
    for (auto& [bev, live] : live_) {
        if (live.ended || now < live.deadline_ns) continue;
        live.ended = true;
        late += !live.over_limit;
        expired.push_back(bev);
    }
    timed_out_ += late;
    uint64_t suppressed = 0;
    if (late > 0 && log_limit_.allow(suppressed)) {
        log::get("admin")->warn(
            "admin http: {} connection(s) closed: no answer within admin.request_timeout_ms ({} "
            "ms) of connecting{}",
            late, timeout_ns_ / 1'000'000,
            suppressed ? fmt::format(" ({} more not logged)", suppressed) : "");
    }
    for (bufferevent* bev : expired)
        bufferevent_trigger_event(bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, 0);
    if (live_.empty()) sweeper_.stop();
}

}  // namespace mdcast
