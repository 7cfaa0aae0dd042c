// Tests for server/cascade/parent_subscriptions.h: the names an edge holds at its
// parent, the ids the parent's refreshes name, what a lost link leaves suspect and
// what a reconnect subscribes again.
#include "server/cascade/parent_subscriptions.h"

#include <catch2/catch.hpp>

namespace {

using mdcast::server::ParentSubscriptions;

TEST_CASE("a name is wanted once, its id learnt from the refresh") {
    ParentSubscriptions s;
    CHECK(s.want("MDCAST", "A"));
    CHECK_FALSE(s.want("MDCAST", "A"));
    CHECK(s.known_ids().empty());  // no refresh yet: nothing to mark suspect
    s.learn(7, "MDCAST", "A");
    CHECK(s.known_ids() == std::vector<uint64_t>{7});
    CHECK(s.name_of(7) == ParentSubscriptions::Name{"MDCAST", "A"});
    CHECK(s.size() == 1);
}

TEST_CASE("a reconnect subscribes every wanted name again, grouped by service") {
    ParentSubscriptions s;
    s.want("MDCAST", "B");
    s.want("MDCAST", "A");
    s.want("OTHER", "X");
    const auto by_service = s.by_service();
    REQUIRE(by_service.size() == 2);
    CHECK(by_service.at("MDCAST") == std::vector<std::string>{"A", "B"});
    CHECK(by_service.at("OTHER") == std::vector<std::string>{"X"});
}

TEST_CASE("a dropped item is no longer wanted but its id stays known") {
    ParentSubscriptions s;
    s.want("MDCAST", "A");
    s.learn(7, "MDCAST", "A");
    CHECK(s.drop(7) == ParentSubscriptions::Name{"MDCAST", "A"});
    CHECK_FALSE(s.drop(7));  // released once
    CHECK_FALSE(s.wanted("MDCAST", "A"));
    CHECK(s.known_ids().empty());
    CHECK(s.by_service().empty());
    CHECK(s.name_of(7));  // wanted again by id (a hold) finds its name
    CHECK(s.want("MDCAST", "A"));
    CHECK(s.known_ids() == std::vector<uint64_t>{7});
}

TEST_CASE("a closed name is dropped by name when it never had an id") {
    ParentSubscriptions s;
    s.want("MDCAST", "NOPE");
    s.drop("MDCAST", "NOPE");
    CHECK(s.size() == 0);
}

TEST_CASE("a new id for a known name voids the old one") {
    ParentSubscriptions s;
    s.want("MDCAST", "A");
    CHECK(s.learn(7, "MDCAST", "A") == 0);
    CHECK(s.learn(7, "MDCAST", "A") == 0);  // the same id again: nothing changed
    CHECK(s.learn(9, "MDCAST", "A") == 7);  // the distributor restarted: a new epoch's id
    CHECK_FALSE(s.name_of(7));
    CHECK(s.known_ids() == std::vector<uint64_t>{9});
    CHECK_FALSE(s.drop(7));
}

TEST_CASE("a name asked and not yet answered is awaited until answered, dropped or the link lost") {
    constexpr int64_t kReask = 30'000;
    ParentSubscriptions s;
    s.want("MDCAST", "A");
    CHECK_FALSE(s.awaiting("MDCAST", "A", 0, kReask));
    s.asked("MDCAST", "A", 100);
    s.asked("MDCAST", "A", 5000);  // asked again: the first ask is the one the parent answers
    CHECK(s.awaiting("MDCAST", "A", 1000, kReask));
    CHECK_FALSE(s.awaiting("MDCAST", "A", 100 + kReask, kReask));  // long unanswered: ask again
    s.answered("MDCAST", "A");
    CHECK_FALSE(s.awaiting("MDCAST", "A", 1000, kReask));

    s.asked("MDCAST", "A", 100);
    s.link_lost();
    CHECK_FALSE(s.awaiting("MDCAST", "A", 1000, kReask));

    s.asked("MDCAST", "A", 100);
    s.learn(7, "MDCAST", "A");
    s.drop(7);  // released: wanted again later, it is asked again
    CHECK_FALSE(s.awaiting("MDCAST", "A", 1000, kReask));
    s.want("MDCAST", "B");
    s.asked("MDCAST", "B", 100);
    s.drop("MDCAST", "B");
    CHECK(s.awaited() == 0);
}

}  // namespace
