#include "common/net/loss_injector.h"

#include <catch2/catch.hpp>

using mdcast::LossInjector;
using mdcast::LossSettings;

TEST_CASE("random loss is seeded and close to its rate", "[loss_injector]") {
    LossInjector a(LossSettings{0.1, 0, 0, 42}), b(LossSettings{0.1, 0, 0, 42});
    int dropped = 0;
    for (int i = 0; i < 100000; ++i) {
        const bool da = a.drop();
        CHECK(da == b.drop());  // same seed, same pattern
        dropped += da;
    }
    CHECK(dropped > 9500);
    CHECK(dropped < 10500);
    CHECK(a.dropped() == static_cast<uint64_t>(dropped));
}

TEST_CASE("bursts drop the last N of every period", "[loss_injector]") {
    LossInjector loss(LossSettings{0, 10, 3, 1});
    std::vector<int> dropped;
    for (int i = 0; i < 20; ++i) {
        if (loss.drop()) dropped.push_back(i);
    }
    CHECK(dropped == std::vector<int>{7, 8, 9, 17, 18, 19});
}

TEST_CASE("inactive settings never drop", "[loss_injector]") {
    LossInjector loss(LossSettings{});
    CHECK_FALSE(loss.active());
    for (int i = 0; i < 1000; ++i) CHECK_FALSE(loss.drop());
}

TEST_CASE("duplication and reordering are separate receive-side rates", "[loss_injector]") {
    LossSettings settings;
    settings.duplicate_rate = 1.0;
    LossInjector loss(settings);
    CHECK(loss.active());
    CHECK(loss.duplicate());
    CHECK_FALSE(loss.reorder());
    CHECK_FALSE(loss.drop());  // neither makes a packet disappear
}
