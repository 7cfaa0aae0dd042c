// Tests for server/fanout.h with trades on a conflate_ms subscription: a trade
// is never merged: the quotes owed go out first, then the trade with its own
// fields and sequence; a plain subscriber gets everything; what is owed after
// the trade goes out once when its interval ends. The same for a slow consumer
// conflating (output.slow_consumer_policy: conflate), whose trades held are
// bounded by output.max_held_trades.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "client_fixture.h"
#include "common/clock.h"
#include "server/fanout.h"
#include "traded_item.h"

namespace {

namespace proto = mdcast::proto;
using mdcast::server::CachedItem;
using mdcast::server::ClientSession;
using mdcast::server::Fanout;
using mdcast::server::ItemCache;
using mdcast::server::testing::ClientFixture;
using mdcast::server::testing::decoded;
using mdcast::server::testing::ReceivedFrame;
using mdcast::server::testing::TradedItem;
namespace wire = mdcast::wire::v1;

constexpr int64_t kSecond = 1'000'000'000;

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

// The slow-consumer policy conflate: a client whose queue is full holds its
// trades and merges its quotes; once the queue drains it gets every trade, in
// order, each after the quotes before it, and the counts add up.
TEST_CASE("a conflating client gets every trade held, in order, after the quotes before it",
          "[fanout][conflation]") {
    ClientFixture clients;
    TradedItem source;
    Fanout fanout(source.cache, clients.loop());
    clients.on_drained = [&](ClientSession& c) { fanout.drain(c); };
    ClientSession& slow = clients.connect(true, 400);
    CHECK(fanout.subscribe(slow, 1, {}));

    uint64_t seq = 2;
    std::vector<uint64_t> trades;
    while (!slow.conflating()) {  // quotes fill the queue
        REQUIRE(seq < 100);
        source.publish(fanout, seq++, false);
    }
    // Conflating: quote, quote, trade, trade, quote, trade, quote, quote.
    for (const bool trade : {false, false, true, true, false, true, false, false}) {
        if (trade) trades.push_back(seq);
        source.publish(fanout, seq++, trade);
    }
    const uint64_t published = seq - 2;
    CHECK(slow.trades_waiting() == 3);
    CHECK(slow.trades_held() == 3);

    std::vector<proto::UpdateView> got;
    std::vector<std::string> bodies;  // the decoded views point into these
    for (int round = 0; round < 20 && slow.conflating(); ++round) {
        for (auto& frame : clients.received(slow)) bodies.push_back(std::move(frame.body));
    }
    for (auto& frame : clients.received(slow)) bodies.push_back(std::move(frame.body));
    REQUIRE_FALSE(slow.conflating());
    for (const auto& body : bodies) {
        proto::UpdateView view;
        REQUIRE(proto::decode_update({reinterpret_cast<const uint8_t*>(body.data()), body.size()},
                                     view));
        got.push_back(view);
    }

    uint64_t counted = 0;
    uint64_t last_seq = 0;
    std::vector<uint64_t> trades_got;
    for (const auto& update : got) {
        CHECK(update.item_seq > last_seq);  // in order: nothing older after something newer
        last_seq = update.item_seq;
        counted += update.conflated ? update.stands_for : 1;
        if (update.conflated) CHECK(update.first_publish_time_ns <= update.publish_time_ns);
        if (!update.trade) continue;
        CHECK_FALSE(update.conflated);
        REQUIRE(update.fields.size() == 1);
        CHECK(update.fields[0].id == 6);
        CHECK(update.fields[0].integer == static_cast<int64_t>(update.item_seq));  // its own value
        trades_got.push_back(update.item_seq);
    }
    CHECK(trades_got == trades);
    CHECK(counted == published);
    CHECK(last_seq == seq - 1);
    CHECK(fanout.counters().conflated_trades == 3);
    // The quotes before the first trade held: one conflated update, their latest value.
    const auto before = std::find_if(got.begin(), got.end(), [&](const proto::UpdateView& u) {
        return u.item_seq == trades[0] - 1;
    });
    REQUIRE(before != got.end());
    CHECK(before->conflated);
    CHECK(before->stands_for >= 2);
    REQUIRE(before->fields.size() == 1);  // its merged quotes only, not the cache's later values
    CHECK(before->fields[0].integer == static_cast<int64_t>(trades[0] - 1));
    CHECK(clients.closes.empty());
}

TEST_CASE("a conflating client holding too many trades is closed slow_consumer",
          "[fanout][conflation]") {
    ClientFixture clients;
    TradedItem source;
    Fanout fanout(source.cache, clients.loop());
    clients.max_held_trades = 3;
    ClientSession& slow = clients.connect(true, 400);
    CHECK(fanout.subscribe(slow, 1, {}));
    uint64_t seq = 2;
    while (!slow.conflating()) source.publish(fanout, seq++, false);
    for (int i = 0; i < 3; ++i) source.publish(fanout, seq++, true);
    CHECK(slow.is_open());
    source.publish(fanout, seq++, true);  // the fourth
    CHECK_FALSE(slow.is_open());
    CHECK(slow.held_trade_limit_reached());
    CHECK(clients.closes == std::vector<mdcast::CloseReason>{mdcast::CloseReason::kSlowConsumer});
}
