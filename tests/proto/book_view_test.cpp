// Tests for proto/book_view.h and the views of a book's frames: each entry
// keeps only the view's fields, deletes and adds always pass, an update with
// nothing left in view is dropped, and so is a book's update left empty.
#include "proto/book_view.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "proto/book_codec.h"
#include "proto/book_image.h"
#include "proto/frame.h"
#include "proto/limits.h"
#include "proto/update_codec.h"

using namespace mdcast::proto;
namespace wire = mdcast::wire::v1;

namespace {

constexpr uint32_t kSize = 3427;    // in the view
constexpr uint32_t kOrders = 3430;  // in the view
constexpr uint32_t kTime = 3855;    // not in the view
const std::vector<uint32_t> kView = {kSize, kOrders};

std::span<const uint8_t> bytes_of(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

FieldEntry int_field(uint32_t id, int64_t v) {
    return FieldEntry{id, FieldKind::kInt, 0, v, 0, {}};
}

MapEntryView price_entry(int64_t mantissa, MapAction action) {
    MapEntryView e;
    e.is_price = true;
    e.mantissa = mantissa;
    e.exponent = -2;
    e.action = action;
    return e;
}

// The field ids of each decoded entry, with its price and action.
struct Seen {
    int64_t mantissa;
    MapAction action;
    std::vector<uint32_t> ids;
    friend bool operator==(const Seen&, const Seen&) = default;
};
std::vector<Seen> seen_in(std::span<const uint8_t> map) {
    std::vector<MapEntryView> entries;
    std::string why;
    REQUIRE(decode_map(map, kMaxMapEntries, entries, why));
    std::vector<Seen> out;
    for (const MapEntryView& e : entries) {
        out.push_back({e.mantissa, e.action, {}});
        FieldListCursor cursor(e.field_bytes);
        FieldEntry f;
        while (cursor.next(f) == FieldListCursor::Step::kField) out.back().ids.push_back(f.id);
    }
    return out;
}

// A map of every case: an add with fields in and out of the view, an add with
// none in it, an update with some, an update with none, a delete.
std::string mixed_map() {
    const FieldEntry all[] = {int_field(kSize, 500), int_field(kTime, 9), int_field(kOrders, 3)};
    const FieldEntry time_only[] = {int_field(kTime, 7)};
    std::string map;
    append_map_entry(map, price_entry(10101, MapAction::kAdd), all);
    append_map_entry(map, price_entry(10201, MapAction::kAdd), time_only);
    append_map_entry(map, price_entry(10101, MapAction::kUpdate), std::span(all, 2));
    append_map_entry(map, price_entry(10301, MapAction::kUpdate), time_only);
    append_map_entry(map, price_entry(10401, MapAction::kDelete), {});
    return map;
}

}  // namespace

TEST_CASE("a map in a view keeps each entry's view fields, and deletes and adds always pass",
          "[book_view]") {
    std::string filtered;
    REQUIRE(append_map_in_view(filtered, bytes_of(mixed_map()), kView));
    const std::vector<Seen> expected = {
        {10101, MapAction::kAdd, {kSize, kOrders}},
        {10201, MapAction::kAdd, {}},  // still creates the level
        {10101, MapAction::kUpdate, {kSize}},
        // 10301's update had nothing in view: dropped
        {10401, MapAction::kDelete, {}},
    };
    CHECK(seen_in(bytes_of(filtered)) == expected);
}

TEST_CASE("a map of updates out of view leaves nothing, and a malformed map is refused",
          "[book_view]") {
    const FieldEntry time_only[] = {int_field(kTime, 7)};
    std::string map;
    append_map_entry(map, price_entry(10301, MapAction::kUpdate), time_only);
    std::string filtered = "kept";
    REQUIRE(append_map_in_view(filtered, bytes_of(map), kView));
    CHECK(filtered == "kept");

    const std::string malformed = "\x0A\x02\x18\x07";  // action 7
    CHECK_FALSE(append_map_in_view(filtered, bytes_of(malformed), kView));
    CHECK(filtered == "kept");
}

TEST_CASE("a book's update frame in a view carries the filtered map", "[book_view]") {
    const std::string map = mixed_map();
    UpdateView update;
    update.item_id = 7;
    update.item_seq = 42;
    update.trade = true;
    update.map_bytes = bytes_of(map);
    update.fields = {int_field(kTime, 1)};  // a summary field out of view

    std::string frame;
    REQUIRE(append_update_frame(frame, update, &kView));
    const FrameHeader header = decode_frame_header(reinterpret_cast<const uint8_t*>(frame.data()));
    CHECK(header.flags == kFrameFlagMap);
    UpdateView decoded;
    REQUIRE(decode_update(bytes_of(frame).subspan(kFrameHeaderBytes), decoded));
    CHECK(decoded.item_seq == 42);
    CHECK(decoded.trade);
    CHECK(decoded.fields.empty());
    std::string expected;
    REQUIRE(append_map_in_view(expected, bytes_of(map), kView));
    CHECK(std::string(decoded.map_bytes.begin(), decoded.map_bytes.end()) == expected);

    std::string whole;  // without a view the map goes as it came
    REQUIRE(append_update_frame(whole, update));
    REQUIRE(decode_update(bytes_of(whole).subspan(kFrameHeaderBytes), decoded));
    CHECK(std::string(decoded.map_bytes.begin(), decoded.map_bytes.end()) == map);
}

TEST_CASE("a book's update with nothing in view is not written, but its summary alone is",
          "[book_view]") {
    const FieldEntry time_only[] = {int_field(kTime, 7)};
    std::string map;
    append_map_entry(map, price_entry(10301, MapAction::kUpdate), time_only);
    UpdateView update;
    update.item_id = 7;
    update.item_seq = 43;
    update.map_bytes = bytes_of(map);

    std::string frame = "before";
    CHECK_FALSE(append_update_frame(frame, update, &kView));
    CHECK(frame == "before");

    update.fields = {int_field(kSize, 1)};  // a summary field in view: a plain update
    frame.clear();
    REQUIRE(append_update_frame(frame, update, &kView));
    CHECK(decode_frame_header(reinterpret_cast<const uint8_t*>(frame.data())).flags == 0);
    UpdateView decoded;
    REQUIRE(decode_update(bytes_of(frame).subspan(kFrameHeaderBytes), decoded));
    CHECK(decoded.map_bytes.empty());
    REQUIRE(decoded.fields.size() == 1);
    CHECK(decoded.fields[0].id == kSize);
}

TEST_CASE("a book's image in a view: every entry, each with the view's fields", "[book_view]") {
    FieldImage image;
    auto book = std::make_unique<BookImage>(wire::DOMAIN_MARKET_BY_PRICE);
    std::string why;
    REQUIRE(book->apply(bytes_of(mixed_map()), kMaxMapEntries, why) == BookImage::Result::kApplied);
    image.set_book(std::move(book));

    wire::Refresh refresh;
    book_into_refresh(image, refresh, &kView);
    CHECK(refresh.domain() == wire::DOMAIN_MARKET_BY_PRICE);
    const std::vector<Seen> expected = {
        {10101, MapAction::kAdd, {kSize, kOrders}},  // the update merged into the add
        // (mantissas without trailing zeros: the cache keeps prices normalised)
        {10201, MapAction::kAdd, {}},
        {10301, MapAction::kAdd, {}},  // an update of a missing key added it
    };
    CHECK(seen_in(bytes_of(refresh.map())) == expected);

    wire::Refresh whole;
    book_into_refresh(image, whole);
    CHECK(seen_in(bytes_of(whole.map()))[0].ids == std::vector<uint32_t>{kSize, kTime, kOrders});
}
