// Packet sequence tracking for one backbone: epochs, gaps, duplicates.
//
// Pure logic, no I/O, so the rules are unit tested directly. The first packet
// of an epoch is a late join at the live edge: nothing before it is counted as
// lost. A different epoch is a new source (distributor restart).
#pragma once

#include <cstdint>

namespace mdcast::server {

struct SequenceCounters {
    uint64_t in_order = 0;
    uint64_t gaps = 0;             // gap events
    uint64_t lost_packets = 0;     // packets covered by gaps
    uint64_t duplicates = 0;       // at or below the highest seen: dropped
    uint64_t epoch_changes = 0;
};

class SequenceTracker {
public:
    enum class Verdict { kInOrder, kGap, kDuplicate, kNewEpoch };

    struct Result {
        Verdict verdict;
        uint64_t gap_from = 0;  // first missing sequence  (kGap)
        uint64_t gap_to = 0;    // one past the last missing (kGap)
    };

    // A data packet with this epoch and sequence arrived.
    Result on_data(uint64_t epoch, uint64_t sequence);
    // A heartbeat says `next_sequence` is the next one to be sent: anything below
    // it that has not arrived is lost (tail loss).
    Result on_heartbeat(uint64_t epoch, uint64_t next_sequence);

    bool joined() const { return epoch_ != 0; }
    uint64_t epoch() const { return epoch_; }
    uint64_t expected() const { return expected_; }
    const SequenceCounters& counters() const { return counters_; }

private:
    Result gap(uint64_t from, uint64_t to);

    uint64_t epoch_ = 0;
    uint64_t expected_ = 0;
    SequenceCounters counters_;
};

}  // namespace mdcast::server
