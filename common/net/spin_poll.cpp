#include "common/net/spin_poll.h"

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
    if (work_seen_) {
        until_ns_ = now + spin_ns_;
        work_seen_ = false;
    }
    if (now < until_ns_) return timer_.start_once(std::chrono::microseconds(0));
    spinning_ = false;
}

}  // namespace mdcast
