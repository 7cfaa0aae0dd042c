// Tests for server/item_cache.h with book items (docs/books.md): actions
// applied so a late joiner's image is the whole current book, the
// cache.max_book_entries limit made loud once, and a refused map.
#include <catch2/catch.hpp>
#include <string>

#include "proto/book_image.h"
#include "server/item_cache.h"

namespace {

using mdcast::server::CachedItem;
using mdcast::server::ItemCache;
using Outcome = ItemCache::Outcome;
using namespace mdcast::proto;
namespace wire = mdcast::wire::v1;

std::string order_map(std::initializer_list<std::pair<const char*, MapAction>> rows) {
    std::string map;
    for (const auto& [id, action] : rows) {
        MapEntryView e;
        e.name = id;
        e.action = action;
        const FieldEntry size{3427, FieldKind::kInt, 0, 100, 0, {}};
        append_map_entry(map, e, std::span(&size, action == MapAction::kDelete ? 0 : 1));
    }
    return map;
}

wire::Refresh book_refresh(uint64_t seq, const std::string& map) {
    wire::Refresh r;
    r.set_item_id(7);
    r.set_item_seq(seq);
    r.set_service_name("SVC");
    r.set_item_name("VOD.L");
    r.mutable_status()->set_stream_state(wire::STREAM_OPEN);
    r.mutable_status()->set_data_state(wire::DATA_OK);
    r.set_domain(wire::DOMAIN_MARKET_BY_ORDER);
    r.set_map(map);
    return r;
}

UpdateView book_update(uint64_t seq, const std::string& map) {
    UpdateView u;
    u.item_id = 7;
    u.item_seq = seq;
    u.trade = true;
    u.map_bytes = {reinterpret_cast<const uint8_t*>(map.data()), map.size()};
    return u;
}

// The cached book as a late joiner's refresh would carry it: its keys in order.
std::string keys_of(const CachedItem& item) {
    wire::Refresh refresh;
    book_into_refresh(item.image, refresh);
    wire::Map map;
    REQUIRE(map.ParseFromString(refresh.map()));
    std::string keys;
    for (const auto& entry : map.entries()) keys += entry.name() + " ";
    return keys;
}

}  // namespace

TEST_CASE("book actions are applied so the image is the whole current book", "[item_cache]") {
    ItemCache cache(64, 100, true, 10);
    CachedItem* item = nullptr;
    REQUIRE(cache.apply_refresh(
                book_refresh(1, order_map({{"B", MapAction::kAdd}, {"A", MapAction::kAdd}})),
                item) == Outcome::kApplied);
    const std::string changes =
        order_map({{"C", MapAction::kAdd}, {"A", MapAction::kDelete}, {"D", MapAction::kUpdate}});
    REQUIRE(cache.apply_update(book_update(2, changes), item) == Outcome::kApplied);
    CHECK(keys_of(*item) == "B C D ");
    CHECK(item->item_seq == 2);
}

TEST_CASE("a book over cache.max_book_entries turns suspect once", "[item_cache]") {
    ItemCache cache(64, 100, true, 2);
    CachedItem* item = nullptr;
    REQUIRE(cache.apply_refresh(book_refresh(1, order_map({{"A", MapAction::kAdd}})), item) ==
            Outcome::kApplied);
    const std::string two = order_map({{"B", MapAction::kAdd}, {"C", MapAction::kAdd}});
    REQUIRE(cache.apply_update(book_update(2, two), item) == Outcome::kBookFull);
    CHECK(item->status.data_state() == wire::DATA_SUSPECT);
    CHECK(item->status.code() == wire::STATUS_LIMIT_REACHED);
    CHECK(item->status.text().find("cache.max_book_entries (2)") != std::string::npos);
    CHECK(item->has_image);  // still served, and said to be incomplete
    const std::string more = order_map({{"D", MapAction::kAdd}});
    CHECK(cache.apply_update(book_update(3, more), item) == Outcome::kApplied);  // said once
    CHECK(keys_of(*item) == "A B ");

    // A refresh that fits makes it whole and OK again.
    REQUIRE(cache.apply_refresh(book_refresh(4, order_map({{"Z", MapAction::kAdd}})), item) ==
            Outcome::kApplied);
    CHECK(item->status.code() == wire::STATUS_NONE);
    // A refresh over the limit is applied up to it, suspect at once.
    REQUIRE(cache.apply_refresh(book_refresh(5, order_map({{"P", MapAction::kAdd},
                                                           {"Q", MapAction::kAdd},
                                                           {"R", MapAction::kAdd}})),
                                item) == Outcome::kBookFull);
    CHECK(item->status.code() == wire::STATUS_LIMIT_REACHED);
}

TEST_CASE("a refused book update is a gap, a refused book refresh leaves no image",
          "[item_cache]") {
    ItemCache cache(64, 100, true, 10);
    CachedItem* item = nullptr;
    REQUIRE(cache.apply_refresh(book_refresh(1, order_map({{"A", MapAction::kAdd}})), item) ==
            Outcome::kApplied);
    const std::string broken = "\x0A\x02\x18\x01";  // an entry without a key
    CHECK(cache.apply_update(book_update(2, broken), item) == Outcome::kItemGap);
    CHECK_FALSE(item->has_image);
    CHECK(item->status.code() == wire::STATUS_UNRECOVERABLE_LOSS);
    CHECK(cache.book_why().find("key") != std::string::npos);

    CHECK(cache.apply_refresh(book_refresh(3, broken), item) == Outcome::kBookRefused);
    CHECK_FALSE(item->has_image);
    CHECK(item->status.code() == wire::STATUS_INVALID_REQUEST);
}
