// Tests for server/redundancy/service_groups.h: the active member by rank,
// failover at once, switch back only after the hold-down, no storm from a
// flapping member, and what is counted.
#include "server/redundancy/service_groups.h"

#include <catch2/catch.hpp>

namespace {

using mdcast::server::GroupSwitch;
using mdcast::server::ServiceGroups;
using mdcast::server::SwitchReason;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kHoldDown = 1000 * kMs;

// Distributors 1 and 2 both list MDCAST up; 1 is heard first.
ServiceGroups two_members(std::vector<uint16_t> rank = {}) {
    ServiceGroups groups;
    groups.configure(std::move(rank), kHoldDown);
    groups.on_service("MDCAST", 1, true, 1 * kMs);
    CHECK(groups.evaluate(1 * kMs).empty());  // the first choice is no switch
    groups.on_service("MDCAST", 2, true, 2 * kMs);
    CHECK(groups.evaluate(2 * kMs).empty());
    return groups;
}

bool is_switch(const std::vector<GroupSwitch>& switches, uint16_t from, uint16_t to,
               SwitchReason reason) {
    return switches.size() == 1 && switches[0].service == "MDCAST" && switches[0].from == from &&
           switches[0].to == to && switches[0].reason == reason;
}

}  // namespace

TEST_CASE("the lowest id is active and the other a standby", "[redundancy]") {
    auto groups = two_members();
    CHECK(groups.active("MDCAST") == 1);
    CHECK(groups.ranked("MDCAST") == std::vector<uint16_t>{1, 2});
    CHECK(groups.standby_count(groups.groups().at("MDCAST")) == 1);
    CHECK_FALSE(groups.active("OTHER"));
    CHECK(groups.ranked("OTHER").empty());
}

TEST_CASE("failover is immediate and names why", "[redundancy]") {
    SECTION("the service goes down") {
        auto groups = two_members();
        groups.on_service("MDCAST", 1, false, 10 * kMs);
        CHECK(is_switch(groups.evaluate(10 * kMs), 1, 2, SwitchReason::kServiceDown));
        CHECK(groups.switches(SwitchReason::kServiceDown) == 1);
    }
    SECTION("the distributor goes silent") {
        auto groups = two_members();
        groups.on_source_silent(1, true, 10 * kMs);
        CHECK(is_switch(groups.evaluate(10 * kMs), 1, 2, SwitchReason::kSourceSilent));
    }
    SECTION("the distributor restarts") {
        auto groups = two_members();
        groups.on_source_reset(1);
        CHECK(is_switch(groups.evaluate(10 * kMs), 1, 2, SwitchReason::kSourceReset));
    }
    SECTION("with no standby up nothing switches, and the group has no standby") {
        auto groups = two_members();
        groups.on_service("MDCAST", 2, false, 5 * kMs);
        groups.on_service("MDCAST", 1, false, 10 * kMs);
        CHECK(groups.evaluate(10 * kMs).empty());
        CHECK(groups.active("MDCAST") == 1);
        CHECK(groups.standby_count(groups.groups().at("MDCAST")) == 0);
    }
}

TEST_CASE("the preferred member takes over again only after the hold-down", "[redundancy]") {
    auto groups = two_members();
    groups.on_service("MDCAST", 1, false, 10 * kMs);
    REQUIRE(groups.evaluate(10 * kMs).size() == 1);
    groups.on_service("MDCAST", 1, true, 100 * kMs);
    CHECK(groups.evaluate(100 * kMs + kHoldDown - 1).empty());
    CHECK(groups.active("MDCAST") == 2);
    CHECK(is_switch(groups.evaluate(100 * kMs + kHoldDown), 2, 1, SwitchReason::kPreferred));
    CHECK(groups.active("MDCAST") == 1);
    CHECK(groups.groups().at("MDCAST").switches == 2);
}

TEST_CASE("a flapping member restarts its hold-down at every return: no storm", "[redundancy]") {
    auto groups = two_members();
    groups.on_source_silent(1, true, 10 * kMs);
    REQUIRE(groups.evaluate(10 * kMs).size() == 1);
    int64_t now = 10 * kMs;
    for (int flap = 0; flap < 20; ++flap) {
        now += kHoldDown / 2;
        groups.on_source_silent(1, false, now);
        CHECK(groups.evaluate(now).empty());
        now += kHoldDown / 2;
        groups.on_source_silent(1, true, now);
        CHECK(groups.evaluate(now).empty());
    }
    groups.on_source_silent(1, false, now);
    CHECK(groups.evaluate(now + kHoldDown).size() == 1);
    CHECK(groups.groups().at("MDCAST").switches == 2);
}

TEST_CASE("a configured rank overrides the lowest id", "[redundancy]") {
    auto groups = two_members({2, 1});
    CHECK(groups.active("MDCAST") == 1);  // first heard, so first chosen ...
    CHECK(is_switch(groups.evaluate(2 * kMs + kHoldDown), 1, 2, SwitchReason::kPreferred));
    CHECK(groups.ranked("MDCAST") == std::vector<uint16_t>{2, 1});  // ... until 2 held long enough
}

TEST_CASE("a less preferred member coming up never takes over", "[redundancy]") {
    auto groups = two_members();
    groups.on_service("MDCAST", 3, true, 3 * kMs);
    CHECK(groups.evaluate(3 * kMs + 10 * kHoldDown).empty());
    CHECK(groups.active("MDCAST") == 1);
    CHECK(groups.ranked("MDCAST") == std::vector<uint16_t>{1, 2, 3});
}
