// Tests for server/conflation_backlog.h: a slow consumer's backlog merges
// quotes but holds every trade as it was, each after the quotes merged before
// it, then the item's current state; a drain stopped half-way resumes where it
// stopped, and drains go round the items; an image or status owed goes after the
// trades.
#include "server/conflation_backlog.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace {

namespace proto = mdcast::proto;
using mdcast::server::ConflationBacklog;
using Kind = ConflationBacklog::Piece::Kind;
using Owed = ConflationBacklog::Owed;

proto::UpdateView quote(uint64_t seq, int64_t bid) {
    proto::UpdateView u;
    u.item_id = 7;
    u.item_seq = seq;
    u.publish_time_ns = seq * 1000;
    u.fields.push_back(proto::FieldEntry{22, proto::FieldKind::kInt, 0, bid, 0, {}});
    return u;
}

std::span<const uint8_t> bytes(const std::string& text) {
    return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

// What a drain was handed, flattened for comparison.
struct Seen {
    uint64_t item_id;
    Kind kind;
    Owed state;
    uint32_t stands_for;  // kQuotes, kState
    uint64_t first_ns;    // kQuotes, kState
    int64_t bid;          // kQuotes: field 22's value
    std::string trade;    // kTrade
};

std::vector<Seen> drain(ConflationBacklog& backlog, size_t stop_after = SIZE_MAX,
                        bool* done = nullptr) {
    std::vector<Seen> seen;
    const bool all = backlog.drain([&](uint64_t item_id, const ConflationBacklog::Piece& piece) {
        if (seen.size() == stop_after) return false;
        Seen s{item_id, piece.kind, piece.state, 0, 0, 0, std::string(piece.trade_frame)};
        if (piece.quotes) {
            s.stands_for = piece.quotes->stands_for;
            s.first_ns = piece.quotes->first_publish_time_ns;
            if (const auto* bid = piece.quotes->fields.find(22)) s.bid = bid->integer;
        }
        seen.push_back(s);
        return true;
    });
    if (done) *done = all;
    return seen;
}

}  // namespace

TEST_CASE("quotes merge, and each trade is held with the quotes before it, in order",
          "[conflation]") {
    ConflationBacklog backlog;
    backlog.owe_update(7, quote(2, 100));
    backlog.owe_update(7, quote(3, 101));
    backlog.hold_trade(7, bytes("trade-4"));
    backlog.hold_trade(7, bytes("trade-5"));  // nothing merged between: the trade alone
    backlog.owe_update(7, quote(6, 102));
    backlog.hold_trade(7, bytes("trade-7"));
    backlog.owe_update(7, quote(8, 103));
    backlog.owe_update(7, quote(9, 104));
    CHECK(backlog.held_trades() == 3);
    CHECK(backlog.held_trade_bytes() == 21);

    bool done = false;
    const auto seen = drain(backlog, SIZE_MAX, &done);
    CHECK(done);
    REQUIRE(seen.size() == 6);
    CHECK(seen[0].kind == Kind::kQuotes);
    CHECK(seen[0].stands_for == 2);
    CHECK(seen[0].first_ns == 2000);
    CHECK(seen[0].bid == 101);  // the latest value before the trade, not the cache's
    CHECK(seen[1].trade == "trade-4");
    CHECK(seen[2].trade == "trade-5");
    CHECK(seen[3].kind == Kind::kQuotes);
    CHECK(seen[3].stands_for == 1);
    CHECK(seen[3].bid == 102);
    CHECK(seen[4].trade == "trade-7");
    // Last the current state: its values come from the cache, its count from here.
    CHECK(seen[5].kind == Kind::kState);
    CHECK(seen[5].state == Owed::kUpdate);
    CHECK(seen[5].stands_for == 2);
    CHECK(seen[5].first_ns == 8000);
    CHECK(backlog.empty());
    CHECK(backlog.held_trades() == 0);
    CHECK(backlog.held_trade_bytes() == 0);
}

TEST_CASE("a trade after the last quote leaves no state owed", "[conflation]") {
    ConflationBacklog backlog;
    backlog.owe_update(7, quote(2, 100));
    backlog.hold_trade(7, bytes("trade-3"));
    const auto seen = drain(backlog);
    REQUIRE(seen.size() == 2);
    CHECK(seen[0].kind == Kind::kQuotes);
    CHECK(seen[1].kind == Kind::kTrade);
}

TEST_CASE("a stopped drain resumes at the piece it stopped at", "[conflation]") {
    ConflationBacklog backlog;
    backlog.owe_update(7, quote(2, 100));
    backlog.hold_trade(7, bytes("trade-3"));
    backlog.hold_trade(7, bytes("trade-4"));
    backlog.owe(9, Owed::kStatus);

    bool done = true;
    auto seen = drain(backlog, 2, &done);  // the quotes and the first trade
    CHECK_FALSE(done);
    REQUIRE(seen.size() == 2);
    CHECK(seen[1].trade == "trade-3");
    CHECK(backlog.held_trades() == 1);

    seen = drain(backlog, SIZE_MAX, &done);
    CHECK(done);
    REQUIRE(seen.size() == 2);
    CHECK(seen[0].trade == "trade-4");  // the quotes went already: not again
    CHECK(seen[1].item_id == 9);
    CHECK(seen[1].kind == Kind::kState);
    CHECK(seen[1].state == Owed::kStatus);
}

TEST_CASE("drains that take a few items each go round every item, not the first ones again",
          "[conflation]") {
    ConflationBacklog backlog;
    for (uint64_t id = 1; id <= 5; ++id) backlog.owe(id, Owed::kStatus);
    auto seen = drain(backlog, 2);
    REQUIRE(seen.size() == 2);
    CHECK(seen[1].item_id == 2);
    // Items 1 and 2 owed again before the next drain: it starts at item 3.
    backlog.owe(1, Owed::kStatus);
    backlog.owe(2, Owed::kStatus);
    seen = drain(backlog, 2);
    REQUIRE(seen.size() == 2);
    CHECK(seen[0].item_id == 3);
    CHECK(seen[1].item_id == 4);
    bool done = false;
    seen = drain(backlog, SIZE_MAX, &done);  // 5, then round to 1 and 2
    CHECK(done);
    REQUIRE(seen.size() == 3);
    CHECK(seen[0].item_id == 5);
    CHECK(seen[1].item_id == 1);
    CHECK(seen[2].item_id == 2);
}

TEST_CASE("an image or status owed goes after the item's trades, the heaviest kind",
          "[conflation]") {
    ConflationBacklog backlog;
    backlog.owe(7, Owed::kImage);
    backlog.owe_update(7, quote(2, 100));  // an update does not lighten what is owed
    backlog.hold_trade(7, bytes("trade-3"));
    backlog.owe(7, Owed::kStatus);
    const auto seen = drain(backlog);
    REQUIRE(seen.size() == 3);
    CHECK(seen[0].kind == Kind::kQuotes);
    CHECK(seen[1].trade == "trade-3");
    CHECK(seen[2].kind == Kind::kState);
    CHECK(seen[2].state == Owed::kImage);
}

TEST_CASE("an update owed without its values stays owed after a trade", "[conflation]") {
    ConflationBacklog backlog;
    backlog.owe(7, Owed::kUpdate);  // the values are the cache's
    backlog.hold_trade(7, bytes("trade-3"));
    const auto seen = drain(backlog);
    REQUIRE(seen.size() == 2);
    CHECK(seen[0].trade == "trade-3");
    CHECK(seen[1].kind == Kind::kState);
    CHECK(seen[1].stands_for == 0);
}

TEST_CASE("a conflated update merged counts as all it stands for, from its first stamp",
          "[conflation]") {
    ConflationBacklog backlog;
    proto::UpdateView paced = quote(5, 100);
    paced.conflated = true;
    paced.stands_for = 4;
    paced.first_publish_time_ns = 2000;
    backlog.owe_update(7, paced);
    backlog.owe_update(7, quote(6, 101));
    const auto seen = drain(backlog);
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].stands_for == 5);
    CHECK(seen[0].first_ns == 2000);
}
