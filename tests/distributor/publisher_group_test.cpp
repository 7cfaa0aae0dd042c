// PublisherGroup: standby publishers of one service on one distributor. The
// best-ranked member that has stayed connected for the hold-down is
// preferred; when the active one leaves, the best standby is named at once;
// a proven reconnect of the active one keeps its place.
#include "distributor/publisher_group.h"

#include <catch2/catch.hpp>

using namespace mdcast::distributor;

namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kHoldDown = 5000 * kMs;

GroupMember member(uint64_t session, uint32_t rank, int64_t joined_ns) {
    GroupMember m;
    m.session = session;
    m.rank = rank;
    m.label = "connection " + std::to_string(session);
    m.joined_ns = joined_ns;
    return m;
}

GroupSwitch switch_to(uint64_t from, uint64_t to, GroupSwitchReason reason) {
    GroupSwitch done;
    done.from = from;
    done.to = to;
    done.reason = reason;
    return done;
}

}  // namespace

TEST_CASE("the first publisher is active, standbys join behind it", "[publisher_group]") {
    PublisherGroup group(7, member(1, 1, 0));
    group.join(member(2, 2, 10 * kMs));
    CHECK(group.active() == 1);
    CHECK(group.standby_count() == 1);
    CHECK(group.member(2)->rank == 2);
    CHECK(group.member(3) == nullptr);
    // Worse-ranked standbys never take over by rank.
    CHECK_FALSE(group.preferred(100'000 * kMs, kHoldDown));
}

TEST_CASE("the active one leaving names the best standby at once", "[publisher_group]") {
    PublisherGroup group(7, member(1, 1, 0));
    group.join(member(3, 3, 1 * kMs));
    group.join(member(2, 2, 2 * kMs));
    group.join(member(4, 2, 3 * kMs));  // the same rank as 2, joined later
    CHECK(group.leave(1) == std::optional<uint64_t>(2));
    group.set_active(switch_to(1, 2, GroupSwitchReason::kPublisherGone));
    CHECK(group.active() == 2);
    CHECK(group.switches(GroupSwitchReason::kPublisherGone) == 1);
    CHECK(group.last_switch()->to == 2);
    // A standby leaving names nobody.
    CHECK_FALSE(group.leave(3));
    CHECK(group.standby_count() == 1);
}

TEST_CASE("a better rank takes over only after the hold-down, restarted by each flap",
          "[publisher_group]") {
    PublisherGroup group(7, member(2, 2, 0));  // the standby, active while 1 was away
    group.join(member(5, 1, 1000 * kMs));      // the preferred one is back
    CHECK_FALSE(group.preferred(1000 * kMs + kHoldDown - 1, kHoldDown));
    // It flaps: gone and back as a new connection, the wait starts again.
    CHECK_FALSE(group.leave(5));
    group.join(member(6, 1, 4000 * kMs));
    CHECK_FALSE(group.preferred(1000 * kMs + kHoldDown, kHoldDown));
    CHECK(group.preferred(4000 * kMs + kHoldDown, kHoldDown) == std::optional<uint64_t>(6));
    group.set_active(switch_to(2, 6, GroupSwitchReason::kPreferred));
    // Switched back once: no more switches however long it stays.
    CHECK_FALSE(group.preferred(100'000 * kMs, kHoldDown));
    CHECK(group.switches(GroupSwitchReason::kPreferred) == 1);
    CHECK(group.switches(GroupSwitchReason::kPublisherGone) == 0);
}

TEST_CASE("no rank stated is the most preferred", "[publisher_group]") {
    PublisherGroup group(7, member(2, 1, 0));
    group.join(member(3, 0, 0));
    CHECK(group.preferred(kHoldDown, kHoldDown) == std::optional<uint64_t>(3));
}

TEST_CASE("a proven reconnect of the active one takes its place", "[publisher_group]") {
    PublisherGroup group(7, member(1, 1, 0));
    group.join(member(2, 2, 0));
    group.replace_active(member(9, 1, 50 * kMs));
    CHECK(group.active() == 9);
    CHECK(group.member(1) == nullptr);
    CHECK(group.standby_count() == 1);
    CHECK(group.switches(GroupSwitchReason::kPublisherGone) == 0);
}
