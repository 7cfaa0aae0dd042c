// LossRecovery: the receiving half of NAK repair, driven with a fake clock and
// crafted sequences.
#include "server/backbone/loss_recovery.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace mdcast::server;

namespace {

constexpr uint64_t kEpoch = 0xE1;
constexpr int64_t kUs = 1000;

struct Recorder : LossRecovery::Handler {
    std::vector<uint64_t> delivered;
    std::vector<std::pair<uint64_t, uint64_t>> lost;
    std::vector<std::pair<uint64_t, int64_t>> repaired;
    std::vector<std::pair<uint64_t, uint64_t>> resets;
    std::vector<std::string> payloads;

    void on_deliver(uint64_t sequence, std::span<const uint8_t> datagram) override {
        delivered.push_back(sequence);
        payloads.emplace_back(datagram.begin(), datagram.end());
    }
    void on_unrecoverable(uint64_t from, uint64_t to) override { lost.emplace_back(from, to); }
    void on_repaired(uint64_t sequence, int64_t ns) override {
        repaired.emplace_back(sequence, ns);
    }
    void on_source_reset(uint64_t previous, uint64_t epoch) override {
        resets.emplace_back(previous, epoch);
    }
};

LossRecoverySettings settings() {
    LossRecoverySettings s;
    s.nak_backoff_min_ns = 50 * kUs;
    s.nak_backoff_max_ns = 300 * kUs;
    s.nak_retry_ns = 1000 * kUs;
    s.nak_max_attempts = 3;
    s.max_buffered_bytes = 1 << 20;
    s.max_gap_packets = 1000;
    s.seed = 7;
    return s;
}

struct Fixture {
    Recorder events;
    LossRecovery recovery;
    int64_t now = 1'000'000'000;

    explicit Fixture(LossRecoverySettings s = settings()) : recovery(s, events) {}

    void data(uint64_t sequence, uint64_t epoch = kEpoch) {
        const std::string payload = "packet-" + std::to_string(sequence);
        recovery.on_data(
            epoch, sequence,
            std::span(reinterpret_cast<const uint8_t*>(payload.data()), payload.size()), now);
    }
    LossRecovery::Ranges tick(int64_t advance_ns) {
        now += advance_ns;
        LossRecovery::Ranges naks;
        recovery.on_timer(now, naks);
        return naks;
    }
};

using Ranges = LossRecovery::Ranges;

}  // namespace

TEST_CASE("in-order packets are delivered at once, late join at the live edge", "[loss_recovery]") {
    Fixture f;
    for (uint64_t s = 100; s < 105; ++s)
        f.data(s);  // first packet is 100: nothing before it is asked for
    CHECK(f.events.delivered == std::vector<uint64_t>{100, 101, 102, 103, 104});
    CHECK(f.events.resets == std::vector<std::pair<uint64_t, uint64_t>>{{0, kEpoch}});
    CHECK(f.events.payloads[2] == "packet-102");
    CHECK(f.recovery.next_deadline() == INT64_MAX);
    CHECK(f.tick(10'000 * kUs).empty());
    CHECK(f.recovery.counters().gaps == 0);
}

TEST_CASE("one gap: held, NAKed after the back-off, repaired in order", "[loss_recovery]") {
    Fixture f;
    f.data(1);
    f.data(2);
    const int64_t detected = f.now;
    f.data(4);
    f.data(5);
    CHECK(f.events.delivered == std::vector<uint64_t>{1, 2});
    CHECK(f.recovery.missing() == 1);
    const int64_t deadline = f.recovery.next_deadline();
    CHECK(deadline >= f.now + 50 * kUs);
    CHECK(deadline <= f.now + 300 * kUs);
    CHECK(f.tick(49 * kUs).empty());  // still inside the back-off: reordering tolerated
    f.now = deadline;
    LossRecovery::Ranges naks;
    f.recovery.on_timer(f.now, naks);
    CHECK(naks == Ranges{{3, 4}});
    f.now += 120 * kUs;
    f.data(3);  // the repair
    CHECK(f.events.delivered == std::vector<uint64_t>{1, 2, 3, 4, 5});
    REQUIRE(f.events.repaired.size() == 1);
    CHECK(f.events.repaired[0].first == 3);
    CHECK(f.events.repaired[0].second == f.now - detected);
    CHECK(f.recovery.counters().repaired == 1);
    CHECK(f.recovery.counters().nak_sequences == 1);
    CHECK(f.recovery.next_deadline() == INT64_MAX);
    CHECK(f.events.lost.empty());
}

TEST_CASE("a packet reordered within the back-off is never NAKed", "[loss_recovery]") {
    Fixture f;
    f.data(1);
    f.data(3);
    f.now += 20 * kUs;
    f.data(2);
    CHECK(f.events.delivered == std::vector<uint64_t>{1, 2, 3});
    CHECK(f.tick(5'000 * kUs).empty());
    CHECK(f.recovery.counters().nak_sequences == 0);
    CHECK(f.recovery.counters().out_of_order == 1);
}

TEST_CASE("many gaps are NAKed together as ranges", "[loss_recovery]") {
    Fixture f;
    f.data(1);
    f.data(3);
    f.data(6);
    f.data(7);
    f.data(10);
    const auto naks = f.tick(300 * kUs);
    CHECK(naks == Ranges{{2, 3}, {4, 6}, {8, 10}});
    for (uint64_t s : {8, 2, 5, 4, 9}) f.data(s);
    CHECK(f.events.delivered == std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
    CHECK(f.recovery.counters().repaired == 5);
}

TEST_CASE("a lost NAK or a lost repair is retried, then given up", "[loss_recovery]") {
    Fixture f;
    f.data(1);
    f.data(3);
    CHECK(f.tick(300 * kUs) == Ranges{{2, 3}});  // attempt 1: the NAK or its repair is lost
    CHECK(f.tick(999 * kUs).empty());            // not before the retry interval
    CHECK(f.tick(1 * kUs) == Ranges{{2, 3}});    // attempt 2, after 1 ms
    CHECK(f.tick(1999 * kUs).empty());           // the interval doubles ...
    CHECK(f.tick(1 * kUs) == Ranges{{2, 3}});    // ... attempt 3 (the maximum) after 2 ms
    CHECK(f.events.lost.empty());
    CHECK(f.tick(4000 * kUs).empty());  // exhausted: given up
    CHECK(f.events.lost == Ranges{{2, 3}});
    CHECK(f.events.delivered == std::vector<uint64_t>{1, 3});  // what follows is not held back
    CHECK(f.recovery.counters().unrecoverable == 1);
    f.data(2);  // a repair that comes too late is a duplicate
    CHECK(f.recovery.counters().duplicates == 1);
}

TEST_CASE("duplicates, before and after the gap, are dropped", "[loss_recovery]") {
    Fixture f;
    f.data(1);
    f.data(1);
    f.data(3);
    f.data(3);
    f.data(2);
    f.data(2);
    CHECK(f.events.delivered == std::vector<uint64_t>{1, 2, 3});
    CHECK(f.recovery.counters().duplicates == 3);
}

TEST_CASE("a gap behind the sender's trailing edge is lost at once", "[loss_recovery]") {
    Fixture f;
    f.data(1);
    f.data(5);
    f.recovery.on_heartbeat(kEpoch, 6, 4, f.now);  // the sender can repair 4 and later only
    CHECK(f.events.lost == Ranges{{2, 4}});
    CHECK(f.tick(300 * kUs) == Ranges{{4, 5}});
    f.data(4);
    CHECK(f.events.delivered == std::vector<uint64_t>{1, 4, 5});
}

TEST_CASE("a heartbeat reveals tail loss", "[loss_recovery]") {
    Fixture f;
    f.data(1);
    f.data(2);
    f.recovery.on_heartbeat(kEpoch, 5, 1, f.now);  // 3 and 4 were sent
    CHECK(f.recovery.missing() == 2);
    CHECK(f.tick(300 * kUs) == Ranges{{3, 5}});
    f.data(4);
    f.data(3);
    CHECK(f.events.delivered == std::vector<uint64_t>{1, 2, 3, 4});
}

TEST_CASE("a heartbeat before any data joins at its next sequence", "[loss_recovery]") {
    Fixture f;
    f.recovery.on_heartbeat(kEpoch, 50, 10, f.now);
    CHECK(f.recovery.next_expected() == 50);
    f.data(50);
    CHECK(f.events.delivered == std::vector<uint64_t>{50});
    CHECK(f.recovery.counters().gaps == 0);
}

TEST_CASE("a new epoch is a new source: held packets are dropped", "[loss_recovery]") {
    Fixture f;
    f.data(1);
    f.data(3);  // held behind the gap at 2
    f.data(7, 0xE2);
    CHECK(f.events.resets ==
          std::vector<std::pair<uint64_t, uint64_t>>{{0, kEpoch}, {kEpoch, 0xE2}});
    CHECK(f.events.delivered == std::vector<uint64_t>{1, 7});
    CHECK(f.recovery.missing() == 0);
    CHECK(f.recovery.buffered_bytes() == 0);
    CHECK(f.recovery.counters().epoch_changes == 1);
}

TEST_CASE("a full hold buffer gives up the oldest gap", "[loss_recovery]") {
    auto s = settings();
    s.max_buffered_bytes = 30;  // three 9-byte payloads fit
    Fixture f(s);
    f.data(1);
    for (uint64_t seq = 3; seq <= 6; ++seq) f.data(seq);  // 4 held: over the limit
    CHECK(f.events.lost == Ranges{{2, 3}});
    CHECK(f.events.delivered == std::vector<uint64_t>{1, 3, 4, 5, 6});
    CHECK(f.recovery.counters().buffer_overflows == 1);
    CHECK(f.recovery.buffered_bytes() == 0);
}

TEST_CASE("one forged far sequence is dropped and the stream goes on", "[loss_recovery]") {
    // Signing off: any host on the group can send a packet numbered 10^9.
    Fixture f;
    f.data(1);
    f.data(1'000'000'000);
    f.data(2);
    f.recovery.on_heartbeat(kEpoch, 2'000'000'000, 1, f.now);  // a forged heartbeat too
    f.data(3);
    CHECK(f.events.delivered == std::vector<uint64_t>{1, 2, 3});
    CHECK(f.events.lost.empty());
    CHECK(f.recovery.missing() == 0);
    CHECK(f.recovery.next_deadline() == INT64_MAX);  // nothing to wait for, nothing to NAK
    CHECK(f.recovery.counters().jumps_refused == 2);
    CHECK(f.recovery.counters().jumps_taken == 0);
}

TEST_CASE("votes for a far jump must agree with each other", "[loss_recovery]") {
    Fixture f;
    f.data(1);
    f.data(1'000'000);  // 10^6, 2 x 10^6, 3 x 10^6: three far packets, no two within 1000
    f.data(2'000'000);
    f.data(3'000'000);
    f.data(2);
    CHECK(f.events.delivered == std::vector<uint64_t>{1, 2});
    CHECK(f.recovery.counters().jumps_refused == 3);
}

TEST_CASE(
    "a jump beyond max_gap_packets confirmed by agreeing packets is lost at once, not "
    "NAKed one by one",
    "[loss_recovery]") {
    Fixture f;
    f.data(1);
    f.data(1'000'000'000);
    f.data(1'000'000'001);
    CHECK(f.events.lost.empty());  // two votes: not yet
    f.data(1'000'000'002);         // the third agrees: taken
    CHECK(f.recovery.counters().jumps_taken == 1);
    CHECK(f.events.lost == Ranges{{2, 1'000'000'002 - 1000}});
    CHECK(f.recovery.missing() == 1000);  // the last max_gap_packets are still asked for
    const auto naks = f.tick(300 * kUs);
    CHECK(naks == Ranges{{1'000'000'002 - 1000, 1'000'000'002}});
}

TEST_CASE("the measured round trip sets a floor under the retry interval", "[loss_recovery]") {
    Fixture f;
    f.recovery.set_retry_floor(5000 * kUs);  // a loaded path: 2 x SRTT = 5 ms
    f.data(1);
    f.data(3);
    CHECK(f.tick(300 * kUs) == Ranges{{2, 3}});
    CHECK(f.tick(4999 * kUs).empty());  // the configured 1 ms would have asked again already
    CHECK(f.tick(1 * kUs) == Ranges{{2, 3}});
}
