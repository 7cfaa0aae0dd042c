#include "common/net/spin_poll.h"

#include <sched.h>

#include "common/clock.h"

namespace mdcast {

SpinPoll::SpinPoll(EventLoop& loop, std::chrono::microseconds spin)
    : timer_(loop, [this] { on_pass(); }), spin_ns_(static_cast<int64_t>(spin.count()) * 1000) {}

void SpinPoll::arm() {
    spinning_ = true;
    timer_.start_once(std::chrono::microseconds(0));
}

// One loop pass went by without sleeping: spin on while work came within
// spin_ns_, else let the loop sleep until the next message wakes it.
void SpinPoll::on_pass() {
    ++passes_;
    const int64_t now = monotonic_ns();
    const bool had_work = work_seen_;
    if (had_work) {
        until_ns_ = now + spin_ns_;
        work_seen_ = false;
    }
    if (now < until_ns_) {
        // A pass without work gives the core to any other runnable thread on
        // it (Aeron's yielding idle strategy): on a dedicated core this returns
        // at once; on a shared one the neighbour this loop feeds (the server
        // woken by the distributor's datagram) runs now instead of after the
        // spin, and the spinner still never sleeps in the kernel.
        if (!had_work) sched_yield();
        return timer_.start_once(std::chrono::microseconds(0));
    }
    spinning_ = false;
}

}  // namespace mdcast
