// Tests for proto/book_image.h: key order, every action, the entry limit, a
// malformed map changing nothing, and a book carried through refreshes.
#include "proto/book_image.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "proto/limits.h"

using namespace mdcast::proto;
namespace wire = mdcast::wire::v1;

namespace {

std::span<const uint8_t> bytes_of(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

FieldEntry size_field(int64_t v) {
    return FieldEntry{3427, FieldKind::kInt, 0, v, 0, {}};
}

// An encoded Map from (mantissa, exponent, action, size) rows; size < 0: no fields.
struct Row {
    int64_t mantissa;
    int32_t exponent;
    MapAction action;
    int64_t size;
};
std::string map_of(std::initializer_list<Row> rows) {
    std::string map;
    for (const Row& r : rows) {
        MapEntryView e;
        e.is_price = true;
        e.mantissa = r.mantissa;
        e.exponent = r.exponent;
        e.action = r.action;
        const FieldEntry field = size_field(r.size);
        append_map_entry(
            map, e,
            r.size < 0 ? std::span<const FieldEntry>{} : std::span<const FieldEntry>(&field, 1));
    }
    return map;
}

BookKey price(int64_t mantissa, int32_t exponent) {
    MapEntryView e;
    e.is_price = true;
    e.mantissa = mantissa;
    e.exponent = exponent;
    return BookKey::of(e);
}

int64_t size_at(const BookImage& book, int64_t mantissa, int32_t exponent) {
    const auto it = book.entries().find(price(mantissa, exponent));
    if (it == book.entries().end()) return -1;
    const auto* slot = it->second.find(3427);
    return slot ? slot->integer : -2;
}

}  // namespace

TEST_CASE("price keys order by value, one value is one key", "[book_image]") {
    CHECK(price(10100, -2) == price(101, 0));
    CHECK(price(0, 5) == price(0, -3));
    CHECK(price(10125, -2) < price(102, 0));
    CHECK(price(-5, 0) < price(-49, -1));
    CHECK(price(-1, 0) < price(0, 0));
    CHECK(price(0, 0) < price(1, -18));
    CHECK(price(9, 18) < price(1, 19 + 5));  // exponents far apart
    CHECK_FALSE(price(1, 24) < price(9, 18));
    CHECK(price(INT64_MAX, -18) < price(INT64_MAX, -17));
    CHECK(price(INT64_MIN, 0) < price(-INT64_MAX, 0));
    MapEntryView name;
    name.name = "A";
    CHECK(price(INT64_MAX, 18) < BookKey::of(name));  // prices before names

    // Against doubles on random values well inside double precision.
    std::mt19937_64 random(7);
    for (int i = 0; i < 2000; ++i) {
        const int64_t ma = static_cast<int64_t>(random() % 2000001) - 1000000;
        const int64_t mb = static_cast<int64_t>(random() % 2000001) - 1000000;
        const int32_t ea = static_cast<int32_t>(random() % 7) - 3;
        const int32_t eb = static_cast<int32_t>(random() % 7) - 3;
        const long double a = ma * std::pow(10.0L, ea), b = mb * std::pow(10.0L, eb);
        INFO(ma << "e" << ea << " vs " << mb << "e" << eb);
        CHECK((price(ma, ea) < price(mb, eb)) == (a < b));
    }
}

TEST_CASE("a price with trailing zeros at the exponent limit stays a key the parser accepts",
          "[book_image]") {
    // 1000 x 10^17 would normalise to 1 x 10^20, past kMaxPriceExponent: found by
    // fuzz_book_map (a book's own refresh payload was refused).
    CHECK(price(1000, 17).exponent == kMaxPriceExponent);
    CHECK(price(1000, 17) == price(100, 18));
    CHECK(price(100, 18) < price(1001, 17));
    BookImage book(wire::DOMAIN_MARKET_BY_PRICE);
    std::string why;
    REQUIRE(book.apply(bytes_of(map_of({{1000, 17, MapAction::kAdd, 5}})), 10, why) ==
            BookImage::Result::kApplied);
    std::string refresh;
    book.to_map(refresh);
    BookImage rebuilt(wire::DOMAIN_MARKET_BY_PRICE);
    CHECK(rebuilt.apply(bytes_of(refresh), 10, why) == BookImage::Result::kApplied);
    CHECK(size_at(rebuilt, 1000, 17) == 5);
}

TEST_CASE("add, update and delete apply in order", "[book_image]") {
    BookImage book(wire::DOMAIN_MARKET_BY_PRICE);
    std::string why;
    REQUIRE(book.apply(bytes_of(map_of({{10100, -2, MapAction::kAdd, 100},
                                        {10200, -2, MapAction::kAdd, 200},
                                        {10300, -2, MapAction::kAdd, 300}})),
                       10, why) == BookImage::Result::kApplied);
    CHECK(book.size() == 3);
    REQUIRE(book.apply(bytes_of(map_of({{102, 0, MapAction::kUpdate, 250},  // same key as 102.00
                                        {10100, -2, MapAction::kDelete, -1},
                                        {99, 0, MapAction::kDelete, -1},     // absent: nothing
                                        {104, 0, MapAction::kUpdate, 4}})),  // absent: added
                       10, why) == BookImage::Result::kApplied);
    CHECK(size_at(book, 101, 0) == -1);
    CHECK(size_at(book, 102, 0) == 250);
    CHECK(size_at(book, 103, 0) == 300);
    CHECK(size_at(book, 104, 0) == 4);
    // An add replaces the entry whole: a field it lacks is gone.
    REQUIRE(book.apply(bytes_of(map_of({{103, 0, MapAction::kAdd, -1}})), 10, why) ==
            BookImage::Result::kApplied);
    CHECK(size_at(book, 103, 0) == -2);
    std::vector<int64_t> order;
    for (const auto& [key, image] : book.entries()) order.push_back(key.mantissa);
    CHECK(order == std::vector<int64_t>{102, 103, 104});
}

TEST_CASE("adds beyond the limit are dropped and reported, the rest still applies",
          "[book_image]") {
    BookImage book(wire::DOMAIN_MARKET_BY_PRICE);
    std::string why;
    CHECK(book.apply(bytes_of(map_of({{1, 0, MapAction::kAdd, 1}, {2, 0, MapAction::kAdd, 2}})), 2,
                     why) == BookImage::Result::kApplied);
    CHECK(book.apply(bytes_of(map_of({{3, 0, MapAction::kAdd, 3},
                                      {1, 0, MapAction::kDelete, -1},
                                      {4, 0, MapAction::kAdd, 4},
                                      {2, 0, MapAction::kUpdate, 22}})),
                     2, why) == BookImage::Result::kFull);
    CHECK(why.find("limit of 2") != std::string::npos);
    CHECK(book.size() == 2);
    CHECK(size_at(book, 3, 0) == -1);
    CHECK(size_at(book, 4, 0) == 4);
    CHECK(size_at(book, 2, 0) == 22);
}

TEST_CASE("a malformed map or a key of the wrong kind changes nothing", "[book_image]") {
    BookImage book(wire::DOMAIN_MARKET_BY_PRICE);
    std::string why;
    REQUIRE(book.apply(bytes_of(map_of({{1, 0, MapAction::kAdd, 1}})), 10, why) ==
            BookImage::Result::kApplied);
    std::string bad = map_of({{1, 0, MapAction::kDelete, -1}, {2, 0, MapAction::kAdd, 2}});
    bad.back() = static_cast<char>(bad.back() | 0x80);  // the last varint now runs past the end
    CHECK(book.apply(bytes_of(bad), 10, why) == BookImage::Result::kMalformed);
    std::string named;
    MapEntryView order;
    order.name = "ORD1";
    append_map_entry(named, order, {});
    CHECK(book.apply(bytes_of(map_of({{1, 0, MapAction::kDelete, -1}}) + named), 10, why) ==
          BookImage::Result::kMalformed);
    CHECK(size_at(book, 1, 0) == 1);
}

TEST_CASE("a book travels through refreshes, updates and copies", "[book_image]") {
    wire::Refresh refresh;
    refresh.set_domain(wire::DOMAIN_MARKET_BY_PRICE);
    refresh.set_map(map_of({{5, 0, MapAction::kAdd, 50}, {6, 0, MapAction::kAdd, 60}}));
    auto* summary = refresh.mutable_fields()->add_fields();
    summary->set_id(1);
    summary->set_int_value(7);
    FieldImage image;
    std::string why;
    REQUIRE(assign_refresh(image, refresh, 10, why) == BookOutcome::kNone);
    REQUIRE(image.book() != nullptr);
    CHECK(image.size() == 1);

    const std::string changes =
        map_of({{5, 0, MapAction::kDelete, -1}, {7, 0, MapAction::kAdd, 70}});
    UpdateView update;
    update.map_bytes = bytes_of(changes);
    update.fields.push_back(FieldEntry{1, FieldKind::kInt, 0, 8, 0, {}});
    CHECK(book_update_valid(image, update, why));
    REQUIRE(apply_update(image, update, 10, why) == BookOutcome::kNone);
    CHECK(image.find(1)->integer == 8);

    const FieldImage copy = image;  // deep: the copy keeps its own book
    REQUIRE(apply_update(image, update, 10, why) == BookOutcome::kNone);
    CHECK(copy.book()->size() == 2);

    // The image as a late joiner's refresh: every entry, in order.
    wire::Refresh late;
    book_into_refresh(copy, late);
    CHECK(late.domain() == wire::DOMAIN_MARKET_BY_PRICE);
    FieldImage joined;
    REQUIRE(assign_refresh(joined, late, 10, why) == BookOutcome::kNone);
    CHECK(joined.book()->entries().size() == 2);
    CHECK(size_at(*joined.book(), 6, 0) == 60);
    CHECK(size_at(*joined.book(), 7, 0) == 70);

    // Not a book: a map is refused, a field-list update is not.
    FieldImage plain;
    wire::Refresh flat;
    REQUIRE(assign_refresh(plain, flat, 10, why) == BookOutcome::kNone);
    CHECK_FALSE(book_update_valid(plain, update, why));
    CHECK(apply_update(plain, update, 10, why) == BookOutcome::kMalformed);
    flat.set_map(changes);
    CHECK(assign_refresh(plain, flat, 10, why) == BookOutcome::kMalformed);
    refresh.set_domain(static_cast<wire::Domain>(9));
    CHECK(assign_refresh(plain, refresh, 10, why) == BookOutcome::kMalformed);
}
