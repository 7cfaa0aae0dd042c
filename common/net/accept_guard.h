// What a listening socket does when accept() fails for want of descriptors or
// memory (EMFILE, ENFILE, ENOBUFS, ENOMEM). Left alone, libevent retries at
// once, forever: a full core and a log line per try while the condition lasts.
//
// The guard stops the listener for kPauseMs and resumes it (a pause, counted
// and logged at most once a second with the number not logged). Each pause
// also spends the process's reserve descriptor (held open from start-up) on
// one waiting connection, accepted and closed at once, so that peer learns
// now instead of hanging in the backlog, then takes the reserve back.
// Other accept errors are logged (rate-limited) and the listener goes on.
#pragma once

#include <cstdint>
#include <string>

#include "common/logging.h"
#include "common/net/event_loop.h"

struct evconnlistener;

namespace mdcast {

class AcceptGuard {
  public:
    static constexpr int kPauseMs = 100;

    // Installs itself as `listener`'s error callback; `name` says which
    // listener in the log ("clients", "admin").
    AcceptGuard(EventLoop& loop, evconnlistener* listener, std::string name);
    ~AcceptGuard();
    AcceptGuard(const AcceptGuard&) = delete;
    AcceptGuard& operator=(const AcceptGuard&) = delete;

    // Process-wide counts, for the daemons' metrics.
    static uint64_t pauses();   // accept paused for want of descriptors
    static uint64_t dropped();  // connections accepted with the reserve and closed
    static bool paused_now();   // some listener is paused at this moment

  private:
    static void on_error(evconnlistener* listener, void* self);
    void pause(int error);
    void drop_one_waiting();
    void resume();

    evconnlistener* listener_;
    std::string name_;
    Timer resume_timer_;
    bool paused_ = false;
};

}  // namespace mdcast
