// Tests for server/fanout.h with trades on a conflate_ms subscription: a trade
// is never merged: the quotes owed go out first, then the trade with its own
// fields and sequence; a plain subscriber gets everything; what is owed after
// the trade goes out once when its interval ends.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "client_fixture.h"
#include "common/clock.h"
#include "server/fanout.h"

namespace {

namespace proto = mdcast::proto;
using mdcast::server::CachedItem;
using mdcast::server::ClientSession;
using mdcast::server::Fanout;
using mdcast::server::ItemCache;
using mdcast::server::testing::ClientFixture;
using mdcast::server::testing::ReceivedFrame;
namespace wire = mdcast::wire::v1;

constexpr int64_t kSecond = 1'000'000'000;

// Item 1 with an image, and updates fanned out as they came from the backbone.
struct TradedItem {
    ItemCache cache{16, 100};
    CachedItem* item = nullptr;
    TradedItem() {
        wire::Refresh r;
        r.set_item_id(1);
        r.set_item_seq(1);
        r.set_service_id(1);
        r.set_service_name("SVC");
        r.set_item_name("A");
        r.mutable_status()->set_stream_state(wire::STREAM_OPEN);
        r.mutable_status()->set_data_state(wire::DATA_OK);
        REQUIRE(cache.apply_refresh(r, item) == ItemCache::Outcome::kApplied);
    }
    // Quotes change field 22, trades field 6; the value is the sequence.
    void publish(Fanout& fanout, uint64_t seq, bool trade) {
        proto::UpdateView u;
        u.item_id = 1;
        u.item_seq = seq;
        u.publish_time_ns = seq * 1000;
        u.trade = trade;
        u.fields.push_back(proto::FieldEntry{
            trade ? 6u : 22u, proto::FieldKind::kInt, 0, static_cast<int64_t>(seq), 0, {}});
        CachedItem* applied = nullptr;
        REQUIRE(cache.apply_update(u, applied) == ItemCache::Outcome::kApplied);
        std::string whole;
        proto::append_update_frame(whole, u);
        fanout.fan_out_update(*applied, u,
                              {reinterpret_cast<const uint8_t*>(whole.data()), whole.size()});
    }
};

proto::UpdateView decoded(const ReceivedFrame& frame) {
    proto::UpdateView view;
    REQUIRE(frame.type == proto::FrameType::kUpdate);
    REQUIRE(proto::decode_update(
        {reinterpret_cast<const uint8_t*>(frame.body.data()), frame.body.size()}, view));
    return view;
}

}  // namespace

TEST_CASE("a trade sends the quotes owed first, then itself, never merged",
          "[fanout][conflation]") {
    ClientFixture clients;
    TradedItem source;
    Fanout fanout(source.cache, clients.loop());
    ClientSession& paced = clients.connect();
    ClientSession& every = clients.connect();
    CHECK(fanout.subscribe(paced, 1, {}, 60'000));  // long enough not to end by itself here
    CHECK(fanout.subscribe(every, 1, {}));

    source.publish(fanout, 2, false);  // at once: the item was quiet
    source.publish(fanout, 3, false);  // held
    source.publish(fanout, 4, false);  // held
    source.publish(fanout, 5, true);   // the trade: 3 and 4 first, then 5
    source.publish(fanout, 6, true);   // nothing owed: at once
    source.publish(fanout, 7, false);  // held

    CHECK(clients.received(every).size() == 6);
    auto got = clients.received(paced);
    REQUIRE(got.size() == 4);
    CHECK(decoded(got[0]).item_seq == 2);
    const auto owed = decoded(got[1]);
    CHECK(owed.conflated);
    CHECK_FALSE(owed.trade);
    CHECK(owed.item_seq == 4);
    CHECK(owed.stands_for == 2);
    CHECK(owed.first_publish_time_ns == 3000);
    for (size_t i = 2; i < 4; ++i) {
        const auto trade = decoded(got[i]);
        CHECK(trade.trade);
        CHECK_FALSE(trade.conflated);
        CHECK(trade.item_seq == 3 + i);
        REQUIRE(trade.fields.size() == 1);
        CHECK(trade.fields[0].id == 6);
        CHECK(trade.fields[0].integer == static_cast<int64_t>(3 + i));
    }
    CHECK(fanout.counters().paced_trades == 1);

    // What 7 owes goes out once when its interval ends, though two timer
    // entries (the first interval's and the one after the trade) are due by then.
    fanout.send_paced(mdcast::monotonic_ns() + 120 * kSecond);
    got = clients.received(paced);
    REQUIRE(got.size() == 1);
    CHECK(decoded(got[0]).item_seq == 7);
    CHECK(decoded(got[0]).stands_for == 1);
}
