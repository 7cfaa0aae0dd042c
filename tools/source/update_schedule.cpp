#include "update_schedule.h"

#include <algorithm>
#include <cstdio>

#include "tools/process_usage.h"

namespace mdcast::tools {

uint64_t UpdateSchedule::due(int64_t now_ns) const {
    // Multiply before dividing: elapsed/1e9 first rounds 1.001 s to 1.0009999..., which
    // would owe one update a tick late at whole milliseconds.
    const double elapsed_ns = static_cast<double>(std::max<int64_t>(0, now_ns - start_ns_));
    return static_cast<uint64_t>(elapsed_ns * rate_ / 1e9);
}

uint64_t UpdateSchedule::owed(int64_t now_ns) {
    const uint64_t due_now = due(now_ns);
    const uint64_t settled = sent_ + skipped_;
    if (due_now <= settled) return 0;
    const uint64_t owed_now = due_now - settled;
    if (owed_now > max_batch_) {
        ++capped_ticks_;
        return max_batch_;
    }
    return owed_now;
}

uint64_t UpdateSchedule::shortfall(int64_t now_ns) const {
    const uint64_t due_now = due(now_ns);
    const uint64_t settled = sent_ + skipped_;
    return due_now > settled ? due_now - settled : 0;
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

SourceSummary pacing_summary(size_t items, int64_t started_ns, int64_t now_ns,
                             const UpdateSchedule& schedule, const StampSelector& stamps) {
    SourceSummary s;
    s.items = items;
    s.elapsed_s = started_ns ? static_cast<double>(now_ns - started_ns) / 1e9 : 0;
    s.target_per_s = schedule.rate();
    s.sent = schedule.total_sent();
    s.shortfall = started_ns ? schedule.shortfall(now_ns) : 0;
    s.capped_ticks = schedule.capped_ticks();
    s.stamped = stamps.stamped();
    return s;
}

void print_source_summary(const SourceSummary& s) {
    const ProcessUsage usage = process_usage();
    std::printf(
        "{\"type\":\"source_summary\",\"mode\":\"%s\",\"items\":%zu,\"requests\":%llu,"
        "\"closes\":%llu,\"open_items\":%zu,\"sent\":%llu,\"elapsed_s\":%.3f,"
        "\"updates_per_s\":%.1f,\"target_per_s\":%.1f,\"shortfall\":%llu,\"capped_ticks\":%llu,"
        "\"stamped\":%llu,\"update_bytes\":%lld,\"undersized\":%llu,\"rejected\":%llu,"
        "\"cpu_s\":%.3f,\"max_rss_mb\":%.1f}\n",
        s.mode, s.items, static_cast<unsigned long long>(s.requests),
        static_cast<unsigned long long>(s.closes), s.open_items,
        static_cast<unsigned long long>(s.sent), s.elapsed_s,
        s.elapsed_s > 0 ? static_cast<double>(s.sent) / s.elapsed_s : 0.0, s.target_per_s,
        static_cast<unsigned long long>(s.shortfall),
        static_cast<unsigned long long>(s.capped_ticks), static_cast<unsigned long long>(s.stamped),
        static_cast<long long>(s.update_bytes), static_cast<unsigned long long>(s.undersized),
        static_cast<unsigned long long>(s.rejected), usage.cpu_s, usage.max_rss_mb);
    std::fflush(stdout);
}

}  // namespace mdcast::tools
