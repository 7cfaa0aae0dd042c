// Tests for server/fanout.h with many conflate_ms subscribers of one item:
// those asking the same interval and view share one pacing slot, so an update
// is merged once and what is owed is encoded once and stored once for all of
// them when the interval ends. A subscriber that joins while the slot owes an
// update gets its image, and the owed update only if it is newer than that image.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "client_fixture.h"
#include "common/clock.h"
#include "server/fanout.h"
#include "traded_item.h"

namespace {

namespace proto = mdcast::proto;
using mdcast::server::ClientSession;
using mdcast::server::Fanout;
using mdcast::server::testing::ClientFixture;
using mdcast::server::testing::decoded;
using mdcast::server::testing::TradedItem;

constexpr int64_t kSecond = 1'000'000'000;
constexpr uint32_t kMinute = 60'000;  // ms: no interval ends by itself in a test

// A subscriber joining now: subscribed, then sent its image.
void join(Fanout& fanout, TradedItem& item, ClientSession& client, uint32_t conflate_ms = kMinute) {
    REQUIRE(fanout.subscribe(client, 1, {}, conflate_ms));
    fanout.send_image(client, *item.item, &item.item->image, {}, false);
}

}  // namespace

TEST_CASE("subscribers asking the same interval share one slot: one merge, one copy",
          "[fanout][conflation]") {
    ClientFixture clients;
    TradedItem item;
    Fanout fanout(item.cache, clients.loop());
    std::vector<ClientSession*> grids;
    for (int i = 0; i < 3; ++i) {
        grids.push_back(&clients.connect());
        join(fanout, item, *grids.back());
        clients.received(*grids.back());
    }
    ClientSession& other = clients.connect();  // another interval: a slot of its own
    join(fanout, item, other, 2 * kMinute);
    clients.received(other);

    for (uint64_t seq = 2; seq <= 4; ++seq) item.publish(fanout, seq, false);
    CHECK(fanout.counters().paced_held == 4);  // seq 3 and 4, once per slot
    CHECK(fanout.paced_waiting() == 2);
    const uint64_t stored = fanout.counters().shared_updates;
    fanout.send_paced(mdcast::monotonic_ns() + 61 * kSecond);
    CHECK(fanout.counters().shared_updates == stored + 1);  // one copy for the three
    CHECK(fanout.counters().paced_out == 3);
    for (ClientSession* grid : grids) {
        const auto got = clients.received(*grid);
        REQUIRE(got.size() == 2);  // seq 2 at once, then seq 3 and 4 as one
        CHECK(decoded(got[0]).item_seq == 2);
        const proto::UpdateView merged = decoded(got[1]);
        CHECK(merged.conflated);
        CHECK(merged.item_seq == 4);
        CHECK(merged.stands_for == 2);
    }
    CHECK(clients.received(other).size() == 1);  // its own interval has not ended
    CHECK(fanout.paced_waiting() == 1);
}

TEST_CASE("a subscriber joining while the slot owes gets the owed update only when newer",
          "[fanout][conflation]") {
    ClientFixture clients;
    TradedItem item;
    Fanout fanout(item.cache, clients.loop());
    ClientSession& first = clients.connect();
    join(fanout, item, first);
    item.publish(fanout, 2, false);  // at once
    item.publish(fanout, 3, false);  // owed
    clients.received(first);

    ClientSession& late = clients.connect();
    join(fanout, item, late);  // its image carries seq 3
    REQUIRE(clients.received(late).size() == 1);
    fanout.send_paced(mdcast::monotonic_ns() + 61 * kSecond);
    REQUIRE(clients.received(first).size() == 1);
    CHECK(clients.received(late).empty());  // the image had it: no duplicate sequence
    CHECK(fanout.counters().paced_out == 1);

    item.publish(fanout, 4, false);  // owed to both (the interval restarted at the send)
    ClientSession& later = clients.connect();
    join(fanout, item, later);       // image at seq 4
    item.publish(fanout, 5, false);  // newer than that image
    clients.received(later);
    fanout.send_paced(mdcast::monotonic_ns() + 200 * kSecond);
    for (ClientSession* client : {&first, &late, &later}) {
        const auto got = clients.received(*client);
        REQUIRE(got.size() == 1);
        CHECK(decoded(got[0]).item_seq == 5);
    }

    // One leaving does not take the slot away from the others.
    item.publish(fanout, 6, false);
    CHECK(fanout.unsubscribe(first, 1));
    fanout.send_paced(mdcast::monotonic_ns() + 400 * kSecond);
    CHECK(clients.received(first).empty());
    CHECK(clients.received(late).size() == 1);
    CHECK(clients.received(later).size() == 1);
}
