// Tests for server/fanout.h with a book and views (docs/books.md, "Views"): a
// book's update filtered once per distinct view and shared by the subscribers
// of that view, not sent to a view it leaves nothing, and a viewed image of the
// whole book with each entry's view fields. Real ClientSessions over
// socketpairs (client_fixture.h).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "client_fixture.h"
#include "proto/book_image.h"
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
using proto::FrameType;
using proto::MapAction;

constexpr uint32_t kSize = 3427, kOrders = 3430;

proto::MapEntryView level(int64_t mantissa, MapAction action) {
    proto::MapEntryView e;
    e.is_price = true;
    e.mantissa = mantissa;
    e.exponent = -1;
    e.action = action;
    return e;
}

// One level's entry with a size and, when orders >= 0, a number of orders.
void add_entry(std::string& map, int64_t mantissa, MapAction action, int64_t size, int64_t orders) {
    std::vector<proto::FieldEntry> fields;
    if (size >= 0) fields.push_back({kSize, proto::FieldKind::kInt, 0, size, 0, {}});
    if (orders >= 0) fields.push_back({kOrders, proto::FieldKind::kInt, 0, orders, 0, {}});
    proto::append_map_entry(map, level(mantissa, action), fields);
}

wire::Refresh book_refresh() {
    wire::Refresh r;
    r.set_item_id(7);
    r.set_item_seq(1);
    r.set_service_name("SVC");
    r.set_item_name("VOD.MBP");
    r.mutable_status()->set_stream_state(wire::STREAM_OPEN);
    r.mutable_status()->set_data_state(wire::DATA_OK);
    r.set_domain(wire::DOMAIN_MARKET_BY_PRICE);
    std::string map;
    add_entry(map, 1001, MapAction::kAdd, 500, 3);
    add_entry(map, 1002, MapAction::kAdd, 200, 1);
    r.set_map(map);
    return r;
}

struct Book {
    ItemCache cache{64, 100, true, 100};
    CachedItem* item = nullptr;
    Book() { REQUIRE(cache.apply_refresh(book_refresh(), item) == ItemCache::Outcome::kApplied); }
    // Applies a book update to the cache and fans it out as it came "from the backbone".
    void update(Fanout& fanout, uint64_t seq, const std::string& map) {
        proto::UpdateView u;
        u.item_id = 7;
        u.item_seq = seq;
        u.trade = true;
        u.map_bytes = {reinterpret_cast<const uint8_t*>(map.data()), map.size()};
        REQUIRE(cache.apply_update(u, item) == ItemCache::Outcome::kApplied);
        std::string whole;
        proto::append_update_frame(whole, u);
        fanout.fan_out_update(*item, u,
                              {reinterpret_cast<const uint8_t*>(whole.data()), whole.size()});
    }
};

// Each entry of a received frame's map as "mantissa:action:field ids".
std::vector<std::string> entries_of(const ReceivedFrame& frame) {
    std::string map_bytes;
    if (frame.type == FrameType::kRefresh) {
        wire::Refresh refresh;
        REQUIRE(refresh.ParseFromString(frame.body));
        map_bytes = refresh.map();
    } else {
        wire::Update update;
        REQUIRE(update.ParseFromString(frame.body));
        map_bytes = update.map();
    }
    wire::Map map;
    REQUIRE(map.ParseFromString(map_bytes));
    std::vector<std::string> out;
    for (const auto& e : map.entries()) {
        std::string text = std::to_string(e.price().mantissa()) + ":" + std::to_string(e.action());
        for (const auto& f : e.fields().fields()) text += ":" + std::to_string(f.id());
        out.push_back(text);
    }
    return out;
}

}  // namespace

TEST_CASE("a book's update is filtered once per view and not sent where nothing is left",
          "[fanout][books]") {
    ClientFixture clients;
    Book book;
    Fanout fanout(book.cache, clients.loop());
    ClientSession& whole = clients.connect();
    ClientSession& orders = clients.connect();
    ClientSession& also_orders = clients.connect();
    ClientSession& sizes = clients.connect();
    fanout.subscribe(whole, 7, {});
    fanout.subscribe(orders, 7, {kOrders});
    fanout.subscribe(also_orders, 7, {kOrders});
    fanout.subscribe(sizes, 7, {kSize});

    std::string size_only;  // the size of a level alone: nothing for the orders view
    add_entry(size_only, 1001, MapAction::kUpdate, 700, -1);
    book.update(fanout, 2, size_only);
    CHECK(clients.received(whole).size() == 1);
    CHECK(clients.received(orders).empty());
    CHECK(clients.received(also_orders).empty());
    const auto got_sizes = clients.received(sizes);
    REQUIRE(got_sizes.size() == 1);
    CHECK(entries_of(got_sizes[0]) == std::vector<std::string>{"1001:2:3427"});

    std::string mixed;  // a new level, a size, a level gone
    add_entry(mixed, 1003, MapAction::kAdd, 100, 2);
    add_entry(mixed, 1002, MapAction::kUpdate, 50, -1);
    proto::append_map_entry(mixed, level(1001, MapAction::kDelete), {});
    const uint64_t shared_before = fanout.counters().shared_updates;
    book.update(fanout, 3, mixed);
    const auto a = clients.received(orders);
    const auto b = clients.received(also_orders);
    REQUIRE(a.size() == 1);
    REQUIRE(b.size() == 1);
    CHECK(a[0].whole == b[0].whole);
    CHECK(entries_of(a[0]) == std::vector<std::string>{"1003:1:3430", "1001:3"});
    CHECK(fanout.counters().shared_updates == shared_before + 1);  // one encoding, shared
    CHECK(entries_of(clients.received(sizes)[0]) ==
          std::vector<std::string>{"1003:1:3427", "1002:2:3427", "1001:3"});
    CHECK(entries_of(clients.received(whole)[0]).size() == 3);
}

TEST_CASE("a viewed image of a book has every entry with the view's fields", "[fanout][books]") {
    ClientFixture clients;
    Book book;
    Fanout fanout(book.cache, clients.loop());
    ClientSession& orders = clients.connect();
    fanout.subscribe(orders, 7, {kOrders});
    fanout.send_image(orders, *book.item, &book.item->image, {kOrders}, false);
    const auto got = clients.received(orders);
    REQUIRE(got.size() == 1);
    REQUIRE(got[0].type == FrameType::kRefresh);
    CHECK(entries_of(got[0]) == std::vector<std::string>{"1001:1:3430", "1002:1:3430"});
}
