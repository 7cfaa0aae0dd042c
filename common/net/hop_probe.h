// Where an update's time goes inside a daemon: for a sample of the stamped
// updates it forwards, how long after the publisher's stamp (CLOCK_REALTIME,
// taken by Publisher::update()) it received the update and how long after it
// wrote it on. mdcast-bench reads both histograms from /metrics and subtracts
// them stage by stage ("where the time goes", docs/benchmarks.md).
//
// The sample is chosen by the stamp itself (about one update in four), so the
// distributor and every server sample the same updates whatever their batches;
// the cost is two clock reads and two histogram records per sampled update.
//
// Contract: note_received() when the daemon has decoded a stamped update; if
// it returns true the probe must be flushed, after the writes that carry the
// update, on the same FlushScheduler that schedules them (schedule it there
// after the writers): its flush() is then the send time. Updates noted beyond
// kMaxPending in one round are not timed at all (counted), so both histograms
// always hold the same updates.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "common/latency_histogram.h"
#include "common/metrics.h"
#include "common/net/flush_scheduler.h"

namespace mdcast {

class HopProbe final : public Flushable {
  public:
    static constexpr size_t kMaxPending = 4096;

    // True for the stamps every stage samples (0, unstamped, never).
    static bool sampled(uint64_t publish_time_ns) {
        return publish_time_ns != 0 && (publish_time_ns * 0x9E3779B97F4A7C15ull) >> 62 == 0;
    }

    // The update stamped `publish_time_ns` was received now. True when the
    // probe must now be scheduled to flush (its first pending update).
    bool note_received(uint64_t publish_time_ns);
    // The updates noted since the last flush have been written on.
    void flush() override;

    const LatencyHistogram& received() const { return received_; }
    const LatencyHistogram& sent() const { return sent_; }
    uint64_t overflows() const { return overflows_; }

    // `stage` names the histograms: <stage>_receive_delay_seconds and
    // <stage>_send_delay_seconds.
    void register_metrics(MetricsRegistry& metrics, const std::string& stage) const;

  private:
    LatencyHistogram received_;
    LatencyHistogram sent_;
    std::array<uint64_t, kMaxPending> pending_{};
    size_t pending_count_ = 0;
    uint64_t overflows_ = 0;
};

}  // namespace mdcast
