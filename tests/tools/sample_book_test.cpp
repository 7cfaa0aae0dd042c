// Tests for tools/source/sample_book.h: mdcast-source's books are deterministic,
// stay within their depth on the right sides of the mid, change by every kind
// of action, and their encoded maps build (in the caches' BookImage) exactly
// the book the generator holds.
#include "sample_book.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <set>

#include "proto/book_image.h"

namespace {

using mdcast::proto::BookImage;
using mdcast::proto::MapAction;
using mdcast::tools::SampleBook;
namespace wire = mdcast::wire::v1;
namespace tools = mdcast::tools;

std::span<const uint8_t> bytes_of(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

int64_t field(const mdcast::proto::FieldImage& image, uint32_t id) {
    const auto* slot = image.find(id);
    REQUIRE(slot != nullptr);
    return slot->entry().integer;
}

// The image holds exactly the generator's levels, field by field.
void check_same(const BookImage& image, const SampleBook& book) {
    REQUIRE(image.size() == book.levels().size());
    auto it = image.entries().begin();
    for (const auto& [price, level] : book.levels()) {
        mdcast::proto::BookKey want;
        want.is_price = true;
        want.mantissa = price;
        want.exponent = tools::kBookPriceExponent;
        mdcast::proto::normalize_price(want.mantissa, want.exponent);
        CHECK(it->first == want);
        CHECK(field(it->second, tools::kOrderSideField) == level.side);
        CHECK(field(it->second, tools::kOrderSizeField) == level.size);
        CHECK(field(it->second, tools::kNumOrdersField) == level.orders);
        ++it;
    }
}

}  // namespace

TEST_CASE("a book's refresh: its levels nearest the mid, bids below, asks above", "[sample_book]") {
    const SampleBook book(7, 2, 5);
    CHECK(book.mid_ticks() == 10200);  // 102.00 for book 2
    std::set<int64_t> prices;
    for (const auto& [price, level] : book.levels()) prices.insert(price);
    CHECK(prices == std::set<int64_t>{10197, 10198, 10199, 10201, 10202});
    for (const auto& [price, level] : book.levels()) CHECK(level.side == (price < 10200 ? 1 : 2));

    std::string map;
    book.refresh_map(map);
    BookImage image(wire::DOMAIN_MARKET_BY_PRICE);
    std::string why;
    REQUIRE(image.apply(bytes_of(map), 100, why) == BookImage::Result::kApplied);
    check_same(image, book);
}

TEST_CASE("a book's updates rebuild it exactly, within its depth, by every action",
          "[sample_book]") {
    constexpr int64_t kLevels = 12;
    SampleBook book(42, 0, kLevels);
    SampleBook twin(42, 0, kLevels);
    std::string map, twin_map;
    book.refresh_map(map);
    BookImage image(wire::DOMAIN_MARKET_BY_PRICE);
    std::string why;
    REQUIRE(image.apply(bytes_of(map), 1000, why) == BookImage::Result::kApplied);
    std::set<MapAction> actions;
    std::vector<mdcast::proto::MapEntryView> entries;
    for (int i = 0; i < 2000; ++i) {
        map.clear();
        twin_map.clear();
        book.next_update(map);
        twin.next_update(twin_map);
        REQUIRE(map == twin_map);  // the same seed, the same stream
        REQUIRE(mdcast::proto::decode_map_for(wire::DOMAIN_MARKET_BY_PRICE, bytes_of(map), 10,
                                              entries, why));
        REQUIRE((entries.size() == 1 || entries.size() == 2));
        for (const auto& entry : entries) actions.insert(entry.action);
        REQUIRE(image.apply(bytes_of(map), 1000, why) == BookImage::Result::kApplied);
        const auto count = static_cast<int64_t>(book.levels().size());
        REQUIRE(count >= kLevels / 2);
        REQUIRE(count <= kLevels);
    }
    check_same(image, book);
    CHECK(actions == std::set<MapAction>{MapAction::kAdd, MapAction::kUpdate, MapAction::kDelete});
    for (const auto& [price, level] : book.levels()) {
        CHECK(level.side == (price < book.mid_ticks() ? 1 : 2));
        CHECK(std::abs(price - book.mid_ticks()) <= kLevels);
        CHECK(price != book.mid_ticks());
    }
}

TEST_CASE("another seed or another book gives another stream", "[sample_book]") {
    SampleBook a(1, 0, 10), b(2, 0, 10), c(1, 1, 10);
    std::string ma, mb, mc;
    for (int i = 0; i < 20; ++i) {
        a.next_update(ma);
        b.next_update(mb);
        c.next_update(mc);
    }
    CHECK(ma != mb);
    CHECK(ma != mc);
}
