// Tests for server/cascade/parent_posts.h: posts an edge sent its parent, their
// answers by post id, and what a lost link does to those in flight.
#include "server/cascade/parent_posts.h"

#include <catch2/catch.hpp>

namespace mdcast::server {
namespace {

namespace wire = ::mdcast::wire::v1;

wire::PostAck ack(uint64_t post_id, bool accepted) {
    wire::PostAck a;
    a.set_post_id(post_id);
    a.set_accepted(accepted);
    return a;
}

TEST_CASE("a parent's answer goes back with the source its post was for, once") {
    ParentPosts posts;
    REQUIRE(posts.start(7, 3));
    REQUIRE(posts.start(8, 4));
    CHECK_FALSE(posts.start(7, 3));  // the same id twice is not sent twice

    const auto answer = posts.answer(ack(8, true));
    REQUIRE(answer);
    CHECK(answer->first == 4);
    CHECK(answer->second.accepted());
    CHECK(posts.in_flight() == 1);

    CHECK_FALSE(posts.answer(ack(8, true)));  // answered already
    CHECK(posts.unknown_answers() == 1);
}

TEST_CASE("a lost link refuses every post in flight, saying why, and forgets them") {
    ParentPosts posts;
    REQUIRE(posts.start(1, 3));
    REQUIRE(posts.start(2, 5));
    posts.forget(2);  // could not be written: not in flight

    const auto refused = posts.link_lost("link to parent p lost");
    REQUIRE(refused.size() == 1);
    CHECK(refused[0].first == 3);
    CHECK(refused[0].second.post_id() == 1);
    CHECK_FALSE(refused[0].second.accepted());
    CHECK(refused[0].second.code() == wire::STATUS_SOURCE_DOWN);
    CHECK(refused[0].second.text() == "link to parent p lost");
    CHECK(posts.in_flight() == 0);
    CHECK_FALSE(posts.answer(ack(1, true)));  // a late answer after the link came back
}

TEST_CASE("posts in flight are bounded") {
    ParentPosts posts;
    for (uint64_t id = 0; id < ParentPosts::kMaxInFlight; ++id) REQUIRE(posts.start(id, 1));
    CHECK_FALSE(posts.start(ParentPosts::kMaxInFlight, 1));
    REQUIRE(posts.answer(ack(0, true)));
    CHECK(posts.start(ParentPosts::kMaxInFlight, 1));
}

}  // namespace
}  // namespace mdcast::server
