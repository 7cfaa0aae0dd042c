// Tests for client-sdk/src/reconnect_policy.h: failover order, immediate
// failover after a stable session's loss, exponential back-off with jitter,
// reset only by a stable session, back-off after a session lost at once.
#include "reconnect_policy.h"

#include <catch2/catch.hpp>
#include <set>
#include <vector>

namespace {

using mdcast::sdk::ReconnectPolicy;
using mdcast::sdk::ReconnectSettings;
using std::chrono::milliseconds;
const milliseconds kStable(5000);  // longer than the default stable_session

ReconnectSettings settings(size_t servers, double jitter = 0.0) {
    return ReconnectSettings{servers, milliseconds(100), milliseconds(1000), jitter};
}

}  // namespace

TEST_CASE("the first attempt is the first server, at once", "[reconnect_policy]") {
    ReconnectPolicy policy(settings(3), 1);
    const auto a = policy.first();
    CHECK(a.server == 0);
    CHECK(a.delay == milliseconds(0));
    CHECK(a.failures == 0);
}

TEST_CASE("a lost session fails over to the next server at once", "[reconnect_policy]") {
    ReconnectPolicy policy(settings(3), 1);
    policy.first();
    policy.on_success();
    auto a = policy.after_loss(kStable);
    CHECK(a.server == 1);
    CHECK(a.delay == milliseconds(0));
    policy.on_success();
    a = policy.after_loss(kStable);
    CHECK(a.server == 2);
    policy.on_success();
    a = policy.after_loss(kStable);
    CHECK(a.server == 0);  // wraps round the list
}

TEST_CASE("failed attempts walk the list with a doubling, capped back-off", "[reconnect_policy]") {
    ReconnectPolicy policy(settings(2), 1);
    policy.first();
    std::vector<std::pair<size_t, int64_t>> seen;
    for (int i = 0; i < 7; ++i) {
        const auto a = policy.after_failure();
        seen.emplace_back(a.server, a.delay.count());
    }
    const std::vector<std::pair<size_t, int64_t>> expected{{1, 100},  {0, 200},  {1, 400}, {0, 800},
                                                           {1, 1000}, {0, 1000}, {1, 1000}};
    CHECK(seen == expected);
    CHECK(policy.failures() == 7);
}

TEST_CASE("a refused login waits the longest back-off before the next server",
          "[reconnect_policy]") {
    ReconnectPolicy policy(settings(2), 1);
    policy.first();
    auto a = policy.after_refusal();
    CHECK(a.server == 1);
    CHECK(a.delay == milliseconds(1000));
    CHECK(a.failures == 1);
    a = policy.after_failure();  // failures count on
    CHECK(a.failures == 2);
    CHECK(a.delay == milliseconds(200));
}

TEST_CASE("only a stable session resets the back-off", "[reconnect_policy]") {
    ReconnectPolicy policy(settings(2), 1);
    policy.first();
    policy.after_failure();
    policy.after_failure();
    policy.on_success();
    CHECK(policy.failures() == 2);  // a login alone proves nothing
    CHECK(policy.after_loss(kStable).delay == milliseconds(0));
    CHECK(policy.failures() == 0);
    CHECK(policy.after_failure().delay == milliseconds(100));
}

TEST_CASE("a session lost right after its login backs off like a failed attempt",
          "[reconnect_policy]") {
    // A peer that accepts every login and closes at once (it refuses what is
    // sent next) must not be reconnected to in a tight loop.
    ReconnectPolicy policy(settings(1), 1);
    policy.first();
    std::vector<int64_t> delays;
    for (int i = 0; i < 6; ++i) {
        policy.on_success();
        delays.push_back(policy.after_loss(milliseconds(10)).delay.count());
    }
    CHECK(delays == std::vector<int64_t>{100, 200, 400, 800, 1000, 1000});
    policy.on_success();
    CHECK(policy.after_loss(milliseconds(1000)).delay == milliseconds(0));  // stable: at once
}

TEST_CASE("a loss right after failures starts the back-off again", "[reconnect_policy]") {
    ReconnectPolicy policy(settings(2), 1);
    policy.first();
    policy.after_failure();
    policy.after_failure();
    const auto a = policy.after_loss(kStable);
    CHECK(a.delay == milliseconds(0));
    CHECK(policy.after_failure().delay == milliseconds(100));
}

TEST_CASE("jitter draws each delay from [d * (1 - jitter), d]", "[reconnect_policy]") {
    ReconnectPolicy policy(settings(1, 0.5), 7);
    std::set<int64_t> distinct;
    for (int round = 0; round < 200; ++round) {
        policy.after_loss(kStable);  // forgets the failures
        for (uint32_t failures = 1; failures <= 5; ++failures) {
            const auto a = policy.after_failure();
            const int64_t full = policy.backoff(failures).count();
            CHECK(a.delay.count() >= full / 2);
            CHECK(a.delay.count() <= full);
            if (failures == 3) distinct.insert(a.delay.count());
        }
    }
    CHECK(distinct.size() > 20);  // really drawn, not one fixed value
}

TEST_CASE("seeds make jitter reproducible and distinct between clients", "[reconnect_policy]") {
    auto draws = [](uint64_t seed) {
        ReconnectPolicy policy(settings(1, 1.0), seed);
        std::vector<int64_t> out;
        for (int i = 0; i < 10; ++i) out.push_back(policy.after_failure().delay.count());
        return out;
    };
    CHECK(draws(11) == draws(11));
    CHECK(draws(11) != draws(12));
}

TEST_CASE("no servers is refused", "[reconnect_policy]") {
    CHECK_THROWS_AS(ReconnectPolicy(settings(0), 1), std::invalid_argument);
}
