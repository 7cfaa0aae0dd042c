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

}  // namespace mdcast::tools
