#include "update_schedule.h"

#include <algorithm>

namespace mdcast::tools {

uint64_t UpdateSchedule::due(int64_t now_ns) const {
    // Multiply before dividing: elapsed/1e9 first rounds 1.001 s to 1.0009999..., which
    // would owe one update a tick late at whole milliseconds.
    const double elapsed_ns = static_cast<double>(std::max<int64_t>(0, now_ns - start_ns_));
    return static_cast<uint64_t>(elapsed_ns * rate_ / 1e9);
}

uint64_t UpdateSchedule::owed(int64_t now_ns) {
    const uint64_t due_now = due(now_ns);
    if (due_now <= sent_) return 0;
    const uint64_t owed_now = due_now - sent_;
    if (owed_now > max_batch_) {
        ++capped_ticks_;
        return max_batch_;
    }
    return owed_now;
}

uint64_t UpdateSchedule::shortfall(int64_t now_ns) const {
    const uint64_t due_now = due(now_ns);
    return due_now > sent_ ? due_now - sent_ : 0;
}

void StampSelector::begin_tick(int64_t now_ns, uint64_t updates) {
    tick_updates_left_ = updates;
    if (every_) return;
    // Owed stamps beyond this tick's updates stay owed for the next tick.
    tick_stamps_left_ = std::min(schedule_.owed(now_ns), updates);
    schedule_.sent(tick_stamps_left_);
}

bool StampSelector::next() {
    if (tick_updates_left_ == 0) return false;  // more next() calls than announced
    if (every_) {
        --tick_updates_left_;
        ++stamped_;
        return true;
    }
    // Knuth's selection sampling: stamp with probability stamps left / updates left,
    // which picks exactly tick_stamps_left_ of the tick's updates, all subsets equally likely.
    const bool stamp = tick_stamps_left_ > 0 &&
                       std::uniform_int_distribution<uint64_t>(0, tick_updates_left_ - 1)(rng_) <
                           tick_stamps_left_;
    --tick_updates_left_;
    if (stamp) {
        --tick_stamps_left_;
        ++stamped_;
    }
    return stamp;
}

}  // namespace mdcast::tools
