// The opt-in idle strategy for a loop on a core of its own (the
// distributor's distributor.busy_poll_us, the server's backbone.busy_poll_us,
// the SDK's ConsumerOptions::busy_poll_us): once work arrives, the loop keeps
// polling its sockets without sleeping (epoll_wait with a zero timeout) until
// `spin` has passed since the last work, then sleeps in epoll as usual, like
// Aeron's busy-spin-then-park idle strategies. Under steady traffic the next
// message is then taken without a kernel wake-up, for the price of a core kept
// busy while traffic flows; idle, it costs nothing. Off (never spins) with 0.
//
// Spinning is a zero-delay timer that re-arms itself: while it is pending the
// loop never blocks, and every pass still serves I/O, timers and signals. It
// lives in its own file so that no receive path has to change for it: the
// owner calls on_work() where its work arrives.
#pragma once

#include <chrono>
#include <cstdint>

#include "common/net/event_loop.h"

namespace mdcast {

class SpinPoll {
  public:
    SpinPoll(EventLoop& loop, std::chrono::microseconds spin);

    // Work arrived: poll without sleeping until `spin` after the last call.
    void on_work() {
        work_seen_ = true;
        if (!spinning_ && spin_ns_ > 0) arm();
    }
    bool spinning() const { return spinning_; }
    // Loop passes made without sleeping (a metric: how busy the spin keeps the loop).
    uint64_t passes() const { return passes_; }

  private:
    void arm();
    void on_pass();

    Timer timer_;
    int64_t spin_ns_;
    int64_t until_ns_ = 0;
    bool spinning_ = false;
    bool work_seen_ = false;
    uint64_t passes_ = 0;
};

}  // namespace mdcast
