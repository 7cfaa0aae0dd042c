// Tests for server/redundancy/member_lag.h: each member of a redundancy group
// (a distributor's service) keeps its own smoothed update delay.
#include "server/redundancy/member_lag.h"

#include <catch2/catch.hpp>

#include "proto/source_ids.h"

using Catch::Matchers::WithinAbs;
using mdcast::server::MemberLag;

namespace {

constexpr int64_t kMs = 1'000'000;

}  // namespace

TEST_CASE("member lag: the first sample sets the delay, later ones move it by a sixteenth") {
    MemberLag lags;
    const uint32_t id = mdcast::proto::make_service_id(1, 1);
    lags.note(id, "MDCAST", 1'000 * kMs, 1'002 * kMs, 50 * kMs);
    const MemberLag::Lag* lag = lags.find(1, "MDCAST");
    REQUIRE(lag != nullptr);
    CHECK_THAT(lag->delay_ns, WithinAbs(2.0 * kMs, 1));
    CHECK(lag->last_update_ns == 50 * kMs);
    lags.note(id, "MDCAST", 2'000 * kMs, 2'018 * kMs, 60 * kMs);  // 18 ms: the level rises by 1 ms
    CHECK_THAT(lag->delay_ns, WithinAbs(3.0 * kMs, 1));
    CHECK(lag->last_update_ns == 60 * kMs);
    CHECK(lag->samples == 2);
}

TEST_CASE("member lag: members are told apart by distributor and service") {
    MemberLag lags;
    lags.note(mdcast::proto::make_service_id(1, 1), "MDCAST", 0, 1 * kMs, 0);
    lags.note(mdcast::proto::make_service_id(2, 1), "MDCAST", 0, 7 * kMs, 0);
    lags.note(mdcast::proto::make_service_id(1, 2), "OTHER", 0, 9 * kMs, 0);
    CHECK_THAT(lags.find(1, "MDCAST")->delay_ns, WithinAbs(1.0 * kMs, 1));
    CHECK_THAT(lags.find(2, "MDCAST")->delay_ns, WithinAbs(7.0 * kMs, 1));
    CHECK_THAT(lags.find(1, "OTHER")->delay_ns, WithinAbs(9.0 * kMs, 1));
    CHECK(lags.find(2, "OTHER") == nullptr);
    CHECK(lags.find(3, "MDCAST") == nullptr);
}
