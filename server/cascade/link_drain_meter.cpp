#include "server/cascade/link_drain_meter.h"

#include <algorithm>

namespace mdcast::server {

void LinkDrainMeter::sample(int64_t now_ns, uint64_t bytes_out, size_t queued_bytes,
                            std::optional<TcpProgress> kernel) {
    const bool backlogged = queued_bytes > 0 || (kernel && kernel->unsent_bytes > 0);
    const uint64_t bytes = kernel ? kernel->bytes_acked : bytes_out;
    if (!samples_.empty() && bytes < samples_.back().bytes) samples_.clear();  // a new connection
    samples_.push_back({now_ns, bytes, backlogged});
    while (samples_.size() > 2 && now_ns - samples_[1].at_ns >= kSpanNs) samples_.pop_front();
    const Sample& first = samples_.front();
    if (now_ns - first.at_ns < kWindowNs) return;
    // The run of backlogged samples that ends now: the link's own rate over it.
    size_t run_start = samples_.size() - 1;
    while (run_start > 0 && samples_[run_start - 1].backlogged && samples_[run_start].backlogged) {
        --run_start;
    }
    const auto rate_since = [&](const Sample& from) {
        return static_cast<double>(bytes - from.bytes) * 1e9 /
               static_cast<double>(now_ns - from.at_ns);
    };
    const Sample& run = samples_[run_start];
    if (backlogged && now_ns - run.at_ns >= kLimitedNs) {
        rate_ = rate_since(run);
    } else {
        rate_ = std::max(rate_, rate_since(first));
    }
}

uint64_t LinkDrainMeter::bound_bytes(uint32_t delay_ms, uint64_t floor_bytes,
                                     uint64_t fallback_bytes) const {
    if (rate_ <= 0) return fallback_bytes;
    const auto budget = static_cast<uint64_t>(rate_ * delay_ms / 1000.0);
    return std::max(budget, floor_bytes);
}

}  // namespace mdcast::server
