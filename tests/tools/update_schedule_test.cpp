// Tests for tools/source/update_schedule.h: paced publishing over simulated
// time (fake "now" values), catch-up after late ticks, the per-tick cap.
#include "update_schedule.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

namespace {

using mdcast::tools::StampSelector;
using mdcast::tools::UpdateSchedule;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSecond = 1'000'000'000;
// A realistic CLOCK_MONOTONIC origin, far from zero.
constexpr int64_t kStart = 123'456 * kSecond + 789;

// One tick as the source runs it: ask what is owed, send all of it.
uint64_t tick(UpdateSchedule& schedule, int64_t now) {
    const uint64_t n = schedule.owed(now);
    schedule.sent(n);
    return n;
}

}  // namespace

TEST_CASE("nothing is owed at the start", "[update_schedule]") {
    UpdateSchedule schedule(1000, 100);
    schedule.start(kStart);
    CHECK(schedule.owed(kStart) == 0);
    CHECK(schedule.owed(kStart + kMs - 1) == 0);  // first update due at 1 ms
    CHECK(schedule.owed(kStart - kSecond) == 0);  // a clock before start owes nothing
    CHECK(schedule.total_sent() == 0);
    CHECK(schedule.capped_ticks() == 0);
    CHECK(schedule.shortfall(kStart) == 0);
}

TEST_CASE("regular ticks send at the target rate", "[update_schedule]") {
    UpdateSchedule schedule(1000, 100);
    schedule.start(kStart);
    for (int64_t ms = 1; ms <= 1000; ++ms) {
        INFO("tick at " << ms << " ms");
        tick(schedule, kStart + ms * kMs);
        // Never ahead of the target, never more than one update behind it.
        const auto target = static_cast<uint64_t>(ms);
        REQUIRE(schedule.total_sent() <= target);
        REQUIRE(schedule.total_sent() + 1 >= target);
    }
    CHECK(schedule.total_sent() == 1000);
    CHECK(schedule.capped_ticks() == 0);
    CHECK(schedule.shortfall(kStart + kSecond) == 0);
}

TEST_CASE("the owed count at each tick is exact at whole milliseconds", "[update_schedule]") {
    // At 1000/s, k updates are due at exactly k ms after start.
    UpdateSchedule schedule(1000, 1'000'000);
    schedule.start(kStart);
    int64_t first_wrong_ms = 0;
    uint64_t wrong_ticks = 0;
    for (int64_t ms = 1; ms <= 10'000; ++ms) {
        const int64_t now = kStart + ms * kMs;
        if (schedule.owed(now) + schedule.total_sent() != static_cast<uint64_t>(ms)) {
            if (first_wrong_ms == 0) first_wrong_ms = ms;
            ++wrong_ticks;
        }
        tick(schedule, now);
    }
    INFO("first tick owing the wrong count: " << first_wrong_ms << " ms");
    CHECK(wrong_ticks == 0);
    CHECK(schedule.total_sent() == 10'000);
}

TEST_CASE("a rate that does not divide the tick is met over time", "[update_schedule]") {
    UpdateSchedule schedule(333, 100);  // 0.333 per 1 ms tick
    schedule.start(kStart);
    uint64_t ticks_with_sends = 0;
    for (int64_t ms = 1; ms <= 3000; ++ms) {
        if (tick(schedule, kStart + ms * kMs) > 0) ++ticks_with_sends;
    }
    CHECK(schedule.total_sent() == 999);  // 333/s for 3 s
    CHECK(ticks_with_sends == 999);       // spread out, one at a time
}

TEST_CASE("a high rate sends batches per tick", "[update_schedule]") {
    UpdateSchedule schedule(1'000'000, 10'000);
    schedule.start(kStart);
    for (int64_t ms = 1; ms <= 100; ++ms) tick(schedule, kStart + ms * kMs);
    CHECK(schedule.total_sent() == 100'000);
    CHECK(schedule.capped_ticks() == 0);
}

TEST_CASE("a late tick catches up so the rate is kept", "[update_schedule]") {
    UpdateSchedule schedule(1000, 100);
    schedule.start(kStart);
    CHECK(tick(schedule, kStart + 1 * kMs) == 1);
    CHECK(tick(schedule, kStart + 2 * kMs) == 1);
    // The event loop stalled for 10 ms: the next tick owes everything since.
    CHECK(tick(schedule, kStart + 12 * kMs) == 10);
    CHECK(tick(schedule, kStart + 13 * kMs) == 1);
    CHECK(schedule.total_sent() == 13);
    CHECK(schedule.capped_ticks() == 0);
}

TEST_CASE("the per-tick cap limits a burst and counts capped ticks", "[update_schedule]") {
    UpdateSchedule schedule(1000, 5);
    schedule.start(kStart);
    // A 20 ms stall: 20 are owed, only 5 go out.
    CHECK(tick(schedule, kStart + 20 * kMs) == 5);
    CHECK(schedule.capped_ticks() == 1);
    CHECK(schedule.shortfall(kStart + 20 * kMs) == 15);

    // Regular ticks then catch up by (5 - 1) per tick: 15 -> 11 -> 7 -> 3 -> 0.
    CHECK(tick(schedule, kStart + 21 * kMs) == 5);  // owed 16
    CHECK(tick(schedule, kStart + 22 * kMs) == 5);  // owed 12
    CHECK(tick(schedule, kStart + 23 * kMs) == 5);  // owed 8
    CHECK(schedule.capped_ticks() == 4);
    CHECK(schedule.shortfall(kStart + 23 * kMs) == 3);
    CHECK(tick(schedule, kStart + 24 * kMs) == 4);  // owed 4: under the cap
    CHECK(schedule.capped_ticks() == 4);
    CHECK(schedule.shortfall(kStart + 24 * kMs) == 0);
    CHECK(schedule.total_sent() == 24);
}

TEST_CASE("owed exactly equal to the cap is not a capped tick", "[update_schedule]") {
    UpdateSchedule schedule(1000, 5);
    schedule.start(kStart);
    CHECK(tick(schedule, kStart + 5 * kMs) == 5);
    CHECK(schedule.capped_ticks() == 0);
    CHECK(tick(schedule, kStart + 11 * kMs) == 5);
    CHECK(schedule.capped_ticks() == 1);
}

TEST_CASE("a rate the ticks cannot sustain falls behind and reports it", "[update_schedule]") {
    // 10 000/s with at most 5 per 1 ms tick: at best 5 000/s.
    UpdateSchedule schedule(10'000, 5);
    schedule.start(kStart);
    for (int64_t ms = 1; ms <= 1000; ++ms) tick(schedule, kStart + ms * kMs);
    CHECK(schedule.total_sent() == 5000);
    CHECK(schedule.capped_ticks() == 1000);
    CHECK(schedule.shortfall(kStart + kSecond) == 5000);
}

TEST_CASE("updates the caller could not send stay owed", "[update_schedule]") {
    UpdateSchedule schedule(1000, 100);
    schedule.start(kStart);
    CHECK(schedule.owed(kStart + 10 * kMs) == 10);
    schedule.sent(4);  // connection closed half way, say
    CHECK(schedule.shortfall(kStart + 10 * kMs) == 6);
    CHECK(schedule.owed(kStart + 10 * kMs) == 6);
    // Asking twice without sending does not change the answer.
    CHECK(schedule.owed(kStart + 10 * kMs) == 6);
    schedule.sent(6);
    CHECK(schedule.owed(kStart + 10 * kMs) == 0);
}

TEST_CASE("start resets the origin", "[update_schedule]") {
    UpdateSchedule schedule(1000, 100);
    schedule.start(kStart);
    CHECK(schedule.owed(kStart + 50 * kMs) == 50);
    schedule.start(kStart + 50 * kMs);
    CHECK(schedule.owed(kStart + 50 * kMs) == 0);
}

TEST_CASE("a zero rate never owes anything", "[update_schedule]") {
    UpdateSchedule schedule(0, 100);
    schedule.start(kStart);
    CHECK(schedule.owed(kStart + 3600 * kSecond) == 0);
    CHECK(schedule.shortfall(kStart + 3600 * kSecond) == 0);
}

TEST_CASE("a long run at a steady rate sends exactly rate x duration", "[update_schedule]") {
    UpdateSchedule schedule(50'000, 1000);
    schedule.start(kStart);
    for (int64_t ms = 1; ms <= 60'000; ++ms) tick(schedule, kStart + ms * kMs);
    CHECK(schedule.total_sent() == 3'000'000);
    CHECK(schedule.capped_ticks() == 0);
}

// ---- StampSelector: --latency-rate ------------------------------------------

namespace {

// Runs `seconds` of 1 ms ticks at `rate` updates/s; returns the stamps per tick.
std::vector<uint64_t> run_stamps(StampSelector& stamps, double rate, int seconds) {
    UpdateSchedule schedule(rate, 1'000'000);
    schedule.start(kStart);
    stamps.start(kStart);
    std::vector<uint64_t> per_tick;
    for (int64_t ms = 1; ms <= seconds * 1000; ++ms) {
        const uint64_t n = schedule.owed(kStart + ms * kMs);
        stamps.begin_tick(kStart + ms * kMs, n);
        uint64_t stamped = 0;
        for (uint64_t i = 0; i < n; ++i) stamped += stamps.next() ? 1 : 0;
        schedule.sent(n);
        per_tick.push_back(stamped);
    }
    return per_tick;
}

}  // namespace

TEST_CASE("without a latency rate every update is stamped", "[stamp_selector]") {
    StampSelector stamps(-1, 1);
    run_stamps(stamps, 10'000, 1);
    CHECK(stamps.stamped() == 10'000);
}

TEST_CASE("a latency rate stamps exactly that many per second", "[stamp_selector]") {
    StampSelector stamps(1000, 7);
    const auto per_tick = run_stamps(stamps, 100'000, 5);
    CHECK(stamps.stamped() == 5000);
    for (uint64_t n : per_tick) REQUIRE(n == 1);  // 1 per 1 ms tick of 100 updates
}

TEST_CASE("stamps owed beyond a tick's updates carry over", "[stamp_selector]") {
    StampSelector stamps(5000, 3);  // more stamps owed than updates sent
    run_stamps(stamps, 1000, 2);
    CHECK(stamps.stamped() == 2000);  // every update, never more
}

TEST_CASE("stamped positions within a tick are spread at random", "[stamp_selector]") {
    // 10 stamps/s over 1 000 updates/s sent as one batch of 100 every 100 ms:
    // the stamped position in each batch should cover the batch, not sit at its start.
    StampSelector stamps(10, 11);
    UpdateSchedule schedule(1000, 1'000'000);
    schedule.start(kStart);
    stamps.start(kStart);
    std::vector<int> position_counts(10, 0);  // deciles of the batch
    for (int64_t tick = 1; tick <= 2000; ++tick) {
        const int64_t now = kStart + tick * 100 * kMs;
        const uint64_t n = schedule.owed(now);
        stamps.begin_tick(now, n);
        for (uint64_t i = 0; i < n; ++i) {
            if (stamps.next()) ++position_counts[static_cast<size_t>(i * 10 / n)];
        }
        schedule.sent(n);
    }
    CHECK(stamps.stamped() == 2000);
    for (int count : position_counts) {
        CHECK(count > 120);  // 200 expected per decile; a fixed position would leave nine at 0
        CHECK(count < 280);
    }
    // More next() calls than announced stamp nothing.
    stamps.begin_tick(kStart + 2001 * 100 * kMs, 0);
    CHECK_FALSE(stamps.next());
}
