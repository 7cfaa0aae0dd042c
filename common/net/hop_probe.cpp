#include "common/net/hop_probe.h"

#include "common/clock.h"

namespace mdcast {

namespace {

int64_t since(uint64_t publish_time_ns, int64_t now_ns) {
    return now_ns - static_cast<int64_t>(publish_time_ns);
}

}  // namespace

bool HopProbe::note_received(uint64_t publish_time_ns) {
    if (!sampled(publish_time_ns)) return false;
    // Past the bound neither end is timed: both histograms keep the same updates (a large
    // backlog read at once is exactly where the two would otherwise part).
    if (pending_count_ == kMaxPending) {
        ++overflows_;
        return false;
    }
    received_.record(since(publish_time_ns, realtime_ns()));
    pending_[pending_count_++] = publish_time_ns;
    return pending_count_ == 1;
}

void HopProbe::flush() {
    if (pending_count_ == 0) return;
    const int64_t now = realtime_ns();
    for (size_t i = 0; i < pending_count_; ++i) sent_.record(since(pending_[i], now));
    pending_count_ = 0;
}

void HopProbe::register_metrics(MetricsRegistry& metrics, const std::string& stage) const {
    metrics.histogram(stage + "_receive_delay_seconds",
                      "Publisher's stamp to this daemon's receipt, for a sample of the stamped "
                      "updates (about 1 in 4, the same at every stage)",
                      [this] { return received_.prometheus_seconds(); });
    metrics.histogram(stage + "_send_delay_seconds",
                      "Publisher's stamp to this daemon's write of the update, same sample",
                      [this] { return sent_.prometheus_seconds(); });
    metrics.counter(stage + "_probe_overflows_total",
                    "Sampled updates past the probe's bound in one flush round (not timed)",
                    [this] { return static_cast<double>(overflows_); });
}

}  // namespace mdcast
