// Tests for client-sdk/src/item_sequencer.h: no update twice or out of order,
// also across a failover to a server that is behind or ahead.
#include "item_sequencer.h"

#include <catch2/catch.hpp>

namespace {

using mdcast::sdk::ItemSequencer;
using V = ItemSequencer::Verdict;
constexpr int64_t kSecond = 1'000'000'000;

}  // namespace

TEST_CASE("updates after a refresh are delivered in order, repeats dropped", "[item_sequencer]") {
    ItemSequencer s;
    CHECK(s.on_update(5) == V::kDrop);  // nothing to apply it to yet
    CHECK(s.on_refresh(10, 0) == V::kDeliver);
    CHECK(s.on_update(10) == V::kDrop);
    CHECK(s.on_update(11) == V::kDeliver);
    CHECK(s.on_update(11) == V::kDrop);
    CHECK(s.on_update(9) == V::kDrop);
    CHECK(s.on_update(13) == V::kDeliver);  // a view may skip sequences
    CHECK(s.last_delivered() == 13);
}

TEST_CASE("after a failover nothing is delivered before the fresh image", "[item_sequencer]") {
    ItemSequencer s;
    s.on_refresh(10, 0);
    s.on_update(11);
    s.on_connection_lost();
    CHECK(s.awaiting_image());
    CHECK(s.on_update(12) == V::kDrop);
    CHECK(s.on_refresh(12, 0) == V::kDeliver);
    CHECK_FALSE(s.awaiting_image());
    CHECK(s.on_update(12) == V::kDrop);
    CHECK(s.on_update(13) == V::kDeliver);
}

TEST_CASE("a fresh image ahead of what was delivered is delivered at once", "[item_sequencer]") {
    ItemSequencer s;
    s.on_refresh(10, 0);
    s.on_connection_lost();
    CHECK(s.on_refresh(25, 0) == V::kDeliver);
    CHECK(s.on_update(26) == V::kDeliver);
}

TEST_CASE("an image equal to what was delivered is delivered", "[item_sequencer]") {
    ItemSequencer s;
    s.on_refresh(10, 0);
    s.on_update(11);
    s.on_connection_lost();
    CHECK(s.on_refresh(11, 0) == V::kDeliver);
    CHECK(s.on_update(11) == V::kDrop);
    CHECK(s.on_update(12) == V::kDeliver);
}

TEST_CASE("an older image is held until the new server's updates catch up", "[item_sequencer]") {
    ItemSequencer s;
    s.on_refresh(10, 0);
    for (uint64_t seq = 11; seq <= 15; ++seq) REQUIRE(s.on_update(seq) == V::kDeliver);
    s.on_connection_lost();
    CHECK(s.on_refresh(12, 0) == V::kHold);
    CHECK(s.holding());
    CHECK(s.on_update(12) == V::kDrop);  // already in the held image
    CHECK(s.on_update(13) == V::kHold);
    CHECK(s.on_update(14) == V::kHold);
    CHECK(s.on_update(15) == V::kRelease);  // now as current as what was delivered
    CHECK_FALSE(s.holding());
    CHECK(s.last_delivered() == 15);
    CHECK(s.on_update(15) == V::kDrop);
    CHECK(s.on_update(16) == V::kDeliver);
}

TEST_CASE("a held image is released by an update that jumps past the mark", "[item_sequencer]") {
    ItemSequencer s;
    s.on_refresh(10, 0);
    s.on_update(20);
    s.on_connection_lost();
    CHECK(s.on_refresh(12, 0) == V::kHold);
    CHECK(s.on_update(22) == V::kRelease);  // a view skipped 13..21
    CHECK(s.last_delivered() == 22);
}

TEST_CASE("a held image that never catches up is delivered after the timeout", "[item_sequencer]") {
    ItemSequencer s;
    s.on_refresh(100, 0);
    s.on_connection_lost();
    CHECK(s.on_refresh(3, 5 * kSecond) == V::kHold);  // the source restarted the item
    CHECK_FALSE(s.hold_expired(6 * kSecond, 2 * kSecond));
    CHECK(s.on_update(4) == V::kHold);
    CHECK(s.hold_expired(7 * kSecond, 2 * kSecond));
    CHECK(s.held_seq() == 4);
    CHECK(s.last_delivered() == 4);
    CHECK_FALSE(s.holding());
    CHECK(s.on_update(5) == V::kDeliver);
}

TEST_CASE("a newer image replaces a held one", "[item_sequencer]") {
    ItemSequencer s;
    s.on_refresh(10, 0);
    s.on_update(15);
    s.on_connection_lost();
    CHECK(s.on_refresh(12, 0) == V::kHold);
    CHECK(s.on_refresh(16, 0) == V::kDeliver);
    CHECK_FALSE(s.holding());
    CHECK(s.on_update(17) == V::kDeliver);
}

TEST_CASE("a second loss while holding drops the held image", "[item_sequencer]") {
    ItemSequencer s;
    s.on_refresh(10, 0);
    s.on_update(15);
    s.on_connection_lost();
    s.on_refresh(12, 0);
    s.on_connection_lost();
    CHECK_FALSE(s.holding());
    CHECK(s.on_update(16) == V::kDrop);
    CHECK(s.on_refresh(14, 0) == V::kHold);  // still behind the 15 delivered
}

TEST_CASE("after a source reset the next refresh may start again", "[item_sequencer]") {
    ItemSequencer s;
    s.on_refresh(10, 0);
    s.on_update(50);
    s.on_source_reset();
    CHECK(s.on_update(51) == V::kDrop);  // no image of the new run yet
    CHECK(s.on_refresh(0, 0) == V::kDeliver);
    CHECK(s.on_update(1) == V::kDeliver);
}

TEST_CASE("without a failover a lower refresh is a new base", "[item_sequencer]") {
    ItemSequencer s;
    s.on_refresh(10, 0);
    s.on_update(11);
    CHECK(s.on_refresh(5, 0) == V::kDeliver);  // the source re-imaged the item itself
    CHECK(s.on_update(6) == V::kDeliver);
}
