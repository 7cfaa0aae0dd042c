#include "server/cascade/link_drain_meter.h"

#include <algorithm>

namespace mdcast::server {

void LinkDrainMeter::sample(int64_t now_ns, uint64_t bytes_out, size_t queued_bytes) {
    const bool backlogged = queued_bytes > 0;
    if (window_start_ns_ == 0 || bytes_out < window_start_bytes_) {
        window_start_ns_ = now_ns;
        window_start_bytes_ = bytes_out;
        window_backlogged_ = backlogged;
        return;
    }
    window_backlogged_ = window_backlogged_ && backlogged;
    const int64_t elapsed_ns = now_ns - window_start_ns_;
    if (elapsed_ns < kWindowNs) return;
    const double rate = static_cast<double>(bytes_out - window_start_bytes_) * 1e9 /
                        static_cast<double>(elapsed_ns);
    // Limited by the link: its rate now (halfway from the last, against one odd window).
    if (window_backlogged_) {
        rate_ = rate_ == 0 ? rate : (rate_ + rate) / 2;
    } else {
        rate_ = std::max(rate_, rate);
    }
    window_start_ns_ = now_ns;
    window_start_bytes_ = bytes_out;
    window_backlogged_ = backlogged;
}

uint64_t LinkDrainMeter::bound_bytes(uint32_t delay_ms, uint64_t floor_bytes,
                                     uint64_t fallback_bytes) const {
    if (rate_ <= 0) return fallback_bytes;
    const auto budget = static_cast<uint64_t>(rate_ * delay_ms / 1000.0);
    return std::max(budget, floor_bytes);
}

}  // namespace mdcast::server
