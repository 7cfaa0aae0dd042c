// Tests for server/cascade/link_drain_meter.h: a link's drain rate measured in
// windows where the queue never emptied, a larger rate kept from windows where
// the feed was the limit, and the queue bound that rate gives.
#include "server/cascade/link_drain_meter.h"

#include <catch2/catch.hpp>

namespace {

using mdcast::server::LinkDrainMeter;

constexpr int64_t kMs = 1'000'000;

// Samples every 100 ms for `ms`: the link drains `per_second`, the queue holds `queued`.
void run(LinkDrainMeter& meter, int64_t& now, uint64_t& out, int ms, uint64_t per_second,
         size_t queued) {
    for (int t = 0; t < ms; t += 100) {
        now += 100 * kMs;
        out += per_second / 10;
        meter.sample(now, out, queued);
    }
}

}  // namespace

TEST_CASE("no rate before a whole window: the fallback bound") {
    LinkDrainMeter meter;
    meter.sample(1 * kMs, 0, 5000);
    meter.sample(51 * kMs, 1800, 5000);
    CHECK(meter.bytes_per_second() == 0);
    CHECK(meter.bound_bytes(250, 4096, 1 << 20) == 1 << 20);
}

TEST_CASE("a backlogged link is measured, and the bound is its rate times the delay") {
    LinkDrainMeter meter;
    int64_t now = 1;
    uint64_t out = 0;
    meter.sample(now, out, 20000);
    run(meter, now, out, 1000, 36000, 20000);
    CHECK(meter.bytes_per_second() == Approx(36000).epsilon(0.01));
    CHECK(meter.bound_bytes(250, 4096, 1 << 20) == 9000);
    CHECK(meter.bound_bytes(50, 4096, 1 << 20) == 4096);  // never below the floor
}

TEST_CASE("a link that slows down is measured again once it backs up") {
    LinkDrainMeter meter;
    int64_t now = 1;
    uint64_t out = 0;
    meter.sample(now, out, 0);
    run(meter, now, out, 1000, 1'000'000, 0);  // an idle queue: the link took the feed
    CHECK(meter.bytes_per_second() == Approx(1'000'000).epsilon(0.01));
    run(meter, now, out, 3000, 40000, 8000);  // now the link is the limit
    CHECK(meter.bytes_per_second() < 50000);
}

TEST_CASE("a quiet feed does not lower the rate measured") {
    LinkDrainMeter meter;
    int64_t now = 1;
    uint64_t out = 0;
    meter.sample(now, out, 100);
    run(meter, now, out, 1000, 500'000, 100);
    const double measured = meter.bytes_per_second();
    run(meter, now, out, 2000, 1000, 0);  // the queue empties: the feed is the limit
    CHECK(meter.bytes_per_second() == measured);
    // A window that ends or starts with the queue empty is not limited by the link either.
    for (int i = 0; i < 6; ++i) {
        now += 100 * kMs;
        out += 100;
        meter.sample(now, out, i % 2 == 0 ? 100 : 0);
    }
    CHECK(meter.bytes_per_second() == measured);
}

TEST_CASE("a link that takes its bytes in bursts is measured at its mean rate") {
    // A slow path with a small receive window: 12,600 bytes go every 350 ms (36 KB/s), nothing
    // in between, the queue never empty. Per-tick figures swing between 0 and 126 KB/s; the
    // rate over the backlogged run must not.
    LinkDrainMeter meter;
    int64_t now = 1;
    uint64_t out = 0;
    meter.sample(now, out, 20000);
    for (int tick = 1; tick <= 40; ++tick) {
        now += 100 * kMs;
        if ((tick * 100) / 350 != ((tick - 1) * 100) / 350) out += 12600;
        meter.sample(now, out, 20000);
        if (tick >= 10) {
            INFO("tick " << tick);
            CHECK(meter.bytes_per_second() > 25000);
            CHECK(meter.bytes_per_second() < 50000);
        }
    }
}

TEST_CASE("the kernel's progress: bytes acknowledged, and unsent bytes a backlog") {
    LinkDrainMeter meter;
    int64_t now = 1;
    uint64_t acked = 0;
    // The socket took 1 MB at once (its buffers), the peer acknowledges 36 KB/s; the output
    // queue is empty but the kernel still holds bytes unsent: the link is the limit.
    meter.sample(now, 1'000'000, 0, mdcast::TcpProgress{acked, 4096});
    for (int tick = 1; tick <= 10; ++tick) {
        now += 100 * kMs;
        acked += 3600;
        meter.sample(now, 1'000'000, 0, mdcast::TcpProgress{acked, 4096});
    }
    CHECK(meter.bytes_per_second() == Approx(36000).epsilon(0.01));
}
