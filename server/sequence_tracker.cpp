#include "server/sequence_tracker.h"

namespace mdcast::server {

SequenceTracker::Result SequenceTracker::gap(uint64_t from, uint64_t to) {
    ++counters_.gaps;
    counters_.lost_packets += to - from;
    return Result{Verdict::kGap, from, to};
}

SequenceTracker::Result SequenceTracker::on_data(uint64_t epoch, uint64_t sequence) {
    if (epoch != epoch_) {
        if (epoch_ != 0) ++counters_.epoch_changes;
        epoch_ = epoch;
        expected_ = sequence + 1;
        return Result{Verdict::kNewEpoch};
    }
    if (sequence < expected_) {
        ++counters_.duplicates;
        return Result{Verdict::kDuplicate};
    }
    const uint64_t from = expected_;
    expected_ = sequence + 1;
    if (sequence == from) {
        ++counters_.in_order;
        return Result{Verdict::kInOrder};
    }
    return gap(from, sequence);
}

SequenceTracker::Result SequenceTracker::on_heartbeat(uint64_t epoch, uint64_t next_sequence) {
    if (epoch != epoch_) {
        if (epoch_ != 0) ++counters_.epoch_changes;
        epoch_ = epoch;
        expected_ = next_sequence;
        return Result{Verdict::kNewEpoch};
    }
    if (next_sequence <= expected_) return Result{Verdict::kInOrder};
    const uint64_t from = expected_;
    expected_ = next_sequence;
    return gap(from, next_sequence);
}

}  // namespace mdcast::server
