// Tests for server/sequence_tracker.h: late join, gaps, duplicates, epochs and
// heartbeat-revealed tail loss on one backbone.
#include "server/sequence_tracker.h"

#include <catch2/catch.hpp>
#include <cstdint>

namespace {

using mdcast::server::SequenceTracker;
using Verdict = SequenceTracker::Verdict;

constexpr uint64_t kEpoch = 0xA5A5A5A5DEADBEEFull;

}  // namespace

TEST_CASE("a fresh tracker has not joined", "[sequence_tracker]") {
    SequenceTracker t;
    CHECK_FALSE(t.joined());
    CHECK(t.epoch() == 0);
    CHECK(t.expected() == 0);
    CHECK(t.counters().in_order == 0);
    CHECK(t.counters().gaps == 0);
}

TEST_CASE("the first packet is a late join: nothing before it is lost", "[sequence_tracker]") {
    SequenceTracker t;
    const auto r = t.on_data(kEpoch, 1'000'000);
    CHECK(r.verdict == Verdict::kNewEpoch);
    CHECK(t.joined());
    CHECK(t.epoch() == kEpoch);
    CHECK(t.expected() == 1'000'001);
    CHECK(t.counters().gaps == 0);
    CHECK(t.counters().lost_packets == 0);
    CHECK(t.counters().epoch_changes == 0);  // joining is not a change of source
}

TEST_CASE("packets in order", "[sequence_tracker]") {
    SequenceTracker t;
    t.on_data(kEpoch, 10);
    for (uint64_t s = 11; s < 111; ++s) {
        REQUIRE(t.on_data(kEpoch, s).verdict == Verdict::kInOrder);
    }
    CHECK(t.expected() == 111);
    CHECK(t.counters().in_order == 100);
    CHECK(t.counters().gaps == 0);
    CHECK(t.counters().duplicates == 0);
}

TEST_CASE("a gap reports [from, to) and counts the lost packets", "[sequence_tracker]") {
    SequenceTracker t;
    t.on_data(kEpoch, 1);
    t.on_data(kEpoch, 2);
    const auto r = t.on_data(kEpoch, 7);  // 3, 4, 5, 6 lost
    CHECK(r.verdict == Verdict::kGap);
    CHECK(r.gap_from == 3);
    CHECK(r.gap_to == 7);
    CHECK(t.expected() == 8);
    CHECK(t.counters().gaps == 1);
    CHECK(t.counters().lost_packets == 4);

    // Back in order after the gap.
    CHECK(t.on_data(kEpoch, 8).verdict == Verdict::kInOrder);
    // A one-packet gap.
    const auto r2 = t.on_data(kEpoch, 10);
    CHECK(r2.verdict == Verdict::kGap);
    CHECK(r2.gap_from == 9);
    CHECK(r2.gap_to == 10);
    CHECK(t.counters().gaps == 2);
    CHECK(t.counters().lost_packets == 5);
    CHECK(t.counters().in_order == 2);  // seq 2 and 8
}

TEST_CASE("duplicates and old packets are dropped", "[sequence_tracker]") {
    SequenceTracker t;
    t.on_data(kEpoch, 5);
    t.on_data(kEpoch, 6);
    CHECK(t.on_data(kEpoch, 6).verdict == Verdict::kDuplicate);  // repeat of the last
    CHECK(t.on_data(kEpoch, 5).verdict == Verdict::kDuplicate);  // older
    CHECK(t.on_data(kEpoch, 0).verdict == Verdict::kDuplicate);  // from before the join
    CHECK(t.counters().duplicates == 3);
    CHECK(t.expected() == 7);

    // A late packet that fills a reported gap is still below the highest seen: dropped.
    t.on_data(kEpoch, 10);
    CHECK(t.on_data(kEpoch, 8).verdict == Verdict::kDuplicate);
    CHECK(t.counters().duplicates == 4);
    CHECK(t.expected() == 11);
}

TEST_CASE("a new epoch is a new source", "[sequence_tracker]") {
    SequenceTracker t;
    t.on_data(kEpoch, 500);
    t.on_data(kEpoch, 501);
    const auto r = t.on_data(kEpoch + 1, 1);  // restarted distributor
    CHECK(r.verdict == Verdict::kNewEpoch);
    CHECK(t.epoch() == kEpoch + 1);
    CHECK(t.expected() == 2);
    CHECK(t.counters().epoch_changes == 1);
    CHECK(t.counters().gaps == 0);
    CHECK(t.counters().duplicates == 0);  // seq 1 < 502 is not a duplicate: new source
    CHECK(t.on_data(kEpoch + 1, 2).verdict == Verdict::kInOrder);

    // A stray packet from the old epoch switches again (the tracker follows the latest source).
    CHECK(t.on_data(kEpoch, 502).verdict == Verdict::kNewEpoch);
    CHECK(t.counters().epoch_changes == 2);
}

TEST_CASE("heartbeat reveals tail loss", "[sequence_tracker]") {
    SequenceTracker t;
    t.on_data(kEpoch, 1);
    t.on_data(kEpoch, 2);
    // Sender sent 3 and 4 and then went idle; both were lost.
    const auto r = t.on_heartbeat(kEpoch, 5);
    CHECK(r.verdict == Verdict::kGap);
    CHECK(r.gap_from == 3);
    CHECK(r.gap_to == 5);
    CHECK(t.expected() == 5);
    CHECK(t.counters().gaps == 1);
    CHECK(t.counters().lost_packets == 2);
    // The next data packet is in order.
    CHECK(t.on_data(kEpoch, 5).verdict == Verdict::kInOrder);
}

TEST_CASE("heartbeat with nothing missing is in order", "[sequence_tracker]") {
    SequenceTracker t;
    t.on_data(kEpoch, 1);
    CHECK(t.on_heartbeat(kEpoch, 2).verdict == Verdict::kInOrder);
    CHECK(t.on_heartbeat(kEpoch, 2).verdict == Verdict::kInOrder);
    // An old heartbeat (reordered) changes nothing.
    CHECK(t.on_heartbeat(kEpoch, 1).verdict == Verdict::kInOrder);
    CHECK(t.expected() == 2);
    CHECK(t.counters().gaps == 0);
    // Heartbeats are not data packets.
    CHECK(t.counters().in_order == 0);
}

TEST_CASE("heartbeat before any data joins at the live edge", "[sequence_tracker]") {
    SequenceTracker t;
    const auto r = t.on_heartbeat(kEpoch, 1000);
    CHECK(r.verdict == Verdict::kNewEpoch);
    CHECK(t.joined());
    CHECK(t.expected() == 1000);
    CHECK(t.counters().gaps == 0);
    CHECK(t.counters().lost_packets == 0);
    CHECK(t.counters().epoch_changes == 0);
    CHECK(t.on_data(kEpoch, 1000).verdict == Verdict::kInOrder);
    // Loss right after the heartbeat-join is detected.
    const auto gap = t.on_data(kEpoch, 1003);
    CHECK(gap.verdict == Verdict::kGap);
    CHECK(gap.gap_from == 1001);
    CHECK(gap.gap_to == 1003);
}

TEST_CASE("heartbeat from a new epoch", "[sequence_tracker]") {
    SequenceTracker t;
    t.on_data(kEpoch, 9);
    CHECK(t.on_heartbeat(kEpoch + 7, 3).verdict == Verdict::kNewEpoch);
    CHECK(t.counters().epoch_changes == 1);
    CHECK(t.expected() == 3);
    CHECK(t.on_data(kEpoch + 7, 3).verdict == Verdict::kInOrder);
}

TEST_CASE("sequence numbers near the top of the range", "[sequence_tracker]") {
    SequenceTracker t;
    t.on_data(kEpoch, UINT64_MAX - 3);
    CHECK(t.on_data(kEpoch, UINT64_MAX - 2).verdict == Verdict::kInOrder);
    const auto r = t.on_data(kEpoch, UINT64_MAX - 1);
    CHECK(r.verdict == Verdict::kInOrder);
    CHECK(t.expected() == UINT64_MAX);
}
