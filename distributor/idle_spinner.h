// The distributor's idle strategy (distributor.busy_poll_us): once a
// publisher's message arrives, the loop keeps polling its sockets without
// sleeping (epoll_wait with a zero timeout) until busy_poll_us have passed
// since the last one, then sleeps in epoll as usual, like Aeron's
// busy-spin-then-park idle strategies. Under steady traffic the next message
// is then taken without a kernel wake-up, for the price of a core kept busy
// while traffic flows. Off (never spins) with 0, the default.
//
// Spinning is a zero-delay timer that re-arms itself: while it is pending the
// loop never blocks, and every pass still serves I/O, timers and signals.
#pragma once

#include <chrono>
#include <cstdint>

#include "common/net/event_loop.h"

namespace mdcast::distributor {

class IdleSpinner {
  public:
    IdleSpinner(EventLoop& loop, std::chrono::microseconds spin);

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

}  // namespace mdcast::distributor
