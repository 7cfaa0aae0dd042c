// The hop probe: which stamps it samples, what it records at receipt and at
// its flush, its bound, and that scheduled behind a writer it flushes after it.
#include "common/net/hop_probe.h"

#include <catch2/catch.hpp>
#include <vector>

#include "common/clock.h"
#include "common/net/event_loop.h"

using namespace mdcast;

namespace {

// The first `n` stamps from `from` (ns) that every stage samples.
std::vector<uint64_t> sampled_stamps(uint64_t from, size_t n) {
    std::vector<uint64_t> out;
    for (uint64_t s = from; out.size() < n; ++s) {
        if (HopProbe::sampled(s)) out.push_back(s);
    }
    return out;
}

struct Writer : Flushable {
    void flush() override { flushed_at = realtime_ns(); }
    int64_t flushed_at = 0;
};

}  // namespace

TEST_CASE("about one stamp in four is sampled, never an unstamped update", "[hop_probe]") {
    CHECK_FALSE(HopProbe::sampled(0));
    const uint64_t base = static_cast<uint64_t>(realtime_ns());
    size_t sampled = 0;
    for (uint64_t i = 0; i < 100'000; ++i) sampled += HopProbe::sampled(base + i * 997);
    CHECK(sampled > 20'000);
    CHECK(sampled < 30'000);
    HopProbe probe;
    uint64_t unsampled = base;
    while (HopProbe::sampled(unsampled)) ++unsampled;
    CHECK_FALSE(probe.note_received(unsampled));
    CHECK_FALSE(probe.note_received(0));
    CHECK(probe.received().count() == 0);
}

TEST_CASE("receipt is timed at once, the send at the flush", "[hop_probe]") {
    HopProbe probe;
    const int64_t now = realtime_ns();
    const auto stamps = sampled_stamps(static_cast<uint64_t>(now - 2'000'000), 3);
    CHECK(probe.note_received(stamps[0]));        // the first asks to be flushed ...
    CHECK_FALSE(probe.note_received(stamps[1]));  // ... the others ride along
    CHECK_FALSE(probe.note_received(stamps[2]));
    CHECK(probe.received().count() == 3);
    CHECK(probe.received().min_ns() >= 1'000'000);  // stamped at least 1 ms before now
    CHECK(probe.sent().count() == 0);
    probe.flush();
    CHECK(probe.sent().count() == 3);
    CHECK(probe.sent().mean_ns() >= probe.received().mean_ns());
    probe.flush();  // nothing pending: nothing recorded
    CHECK(probe.sent().count() == 3);
    CHECK(probe.note_received(stamps[0]));  // a new round asks again
}

TEST_CASE("past its bound a round's updates are not timed at either end", "[hop_probe]") {
    HopProbe probe;
    const auto stamps =
        sampled_stamps(static_cast<uint64_t>(realtime_ns()), HopProbe::kMaxPending + 5);
    for (uint64_t s : stamps) probe.note_received(s);
    CHECK(probe.received().count() == HopProbe::kMaxPending);
    CHECK(probe.overflows() == 5);
    probe.flush();
    CHECK(probe.sent().count() == HopProbe::kMaxPending);  // the same updates at both ends
}

TEST_CASE("scheduled behind a writer, the probe flushes after its write", "[hop_probe]") {
    EventLoop loop;
    FlushScheduler scheduler(loop, std::chrono::microseconds(0));
    HopProbe probe;
    Writer writer;
    Timer stop(loop, [&loop] { loop.stop(); });
    stop.start_once(std::chrono::milliseconds(20));
    const auto stamp = sampled_stamps(static_cast<uint64_t>(realtime_ns()), 1)[0];
    scheduler.schedule(writer);
    if (probe.note_received(stamp)) scheduler.schedule(probe);
    loop.run();
    REQUIRE(probe.sent().count() == 1);
    REQUIRE(writer.flushed_at > 0);
    // The probe's clock read came after the writer's: its delay is at least the writer's.
    CHECK(probe.sent().max_ns() >= writer.flushed_at - static_cast<int64_t>(stamp) - 1);
}

TEST_CASE("the histograms and the overflow count are exported under the stage's name",
          "[hop_probe]") {
    HopProbe probe;
    MetricsRegistry metrics("mdcast_test_");
    probe.register_metrics(metrics, "update");
    const auto stamp = sampled_stamps(static_cast<uint64_t>(realtime_ns() - 100'000), 1)[0];
    probe.note_received(stamp);
    probe.flush();
    const std::string text = metrics.prometheus();
    CHECK(text.find("mdcast_test_update_receive_delay_seconds_count 1") != std::string::npos);
    CHECK(text.find("mdcast_test_update_send_delay_seconds_count 1") != std::string::npos);
    CHECK(text.find("mdcast_test_update_probe_overflows_total 0") != std::string::npos);
}
