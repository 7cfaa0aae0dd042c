// Tests for tools/replay/replay_books.h: a captured book's map becomes the
// SDK's BookChanges entry for entry — keys (names as they are, prices by
// value), actions and fields in their order — and a map that does not fit its
// domain is refused, saying why.
#include "tools/replay/replay_books.h"

#include <catch2/catch.hpp>

#include "proto/book_image.h"

namespace {

namespace proto = mdcast::proto;
namespace wire = mdcast::wire::v1;
using mdcast::BookChanges;
using mdcast::tools::BookReplayer;

std::span<const uint8_t> bytes_of(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// An INT field entry: id, kind, exponent, integer, real, text.
proto::FieldEntry int_field(uint32_t id, int64_t value) {
    return proto::FieldEntry{id, proto::FieldKind::kInt, 0, value, 0, {}};
}

proto::MapEntryView name_entry(std::string_view name, proto::MapAction action) {
    proto::MapEntryView entry;
    entry.name = name;
    entry.action = action;
    return entry;
}

std::vector<proto::MapEntryView> decoded(const BookChanges& changes, wire::Domain domain) {
    std::vector<proto::MapEntryView> out;
    std::string why;
    REQUIRE(proto::decode_map_for(domain, changes.bytes(), 100, out, why));
    return out;
}

}  // namespace

TEST_CASE("a MarketByOrder map replays entry for entry", "[replay_books]") {
    std::string map;
    const std::array add{int_field(3427, 10125), int_field(3429, 500)};
    const std::array size{int_field(3429, 300)};
    proto::append_map_entry(map, name_entry("order-1", proto::MapAction::kAdd), add);
    proto::append_map_entry(map, name_entry("order-2", proto::MapAction::kUpdate), size);
    proto::append_map_entry(map, name_entry("order-1", proto::MapAction::kDelete), {});

    BookReplayer replayer;
    BookChanges changes;
    std::string why;
    REQUIRE(replayer.to_changes(wire::DOMAIN_MARKET_BY_ORDER, bytes_of(map), changes, why));
    CHECK(changes.size() == 3);
    CHECK(changes.keys_by_name());
    // The SDK encodes the same entries the same way: the bytes are the captured ones.
    CHECK(std::string(changes.bytes().begin(), changes.bytes().end()) == map);
    const auto entries = decoded(changes, wire::DOMAIN_MARKET_BY_ORDER);
    CHECK(entries[0].name == "order-1");
    CHECK(entries[1].action == proto::MapAction::kUpdate);
    CHECK(entries[2].action == proto::MapAction::kDelete);
    CHECK(entries[2].field_bytes.empty());
}

TEST_CASE("a MarketByPrice map replays with the same prices by value", "[replay_books]") {
    std::string map;
    proto::MapEntryView level;
    level.is_price = true;
    level.mantissa = 10000;  // 100.00: the SDK writes it as 1 x 10^2, the same key
    level.exponent = -2;
    level.action = proto::MapAction::kAdd;
    const std::array fields{int_field(3429, 700)};
    proto::append_map_entry(map, level, fields);

    BookReplayer replayer;
    BookChanges changes;
    std::string why;
    REQUIRE(replayer.to_changes(wire::DOMAIN_MARKET_BY_PRICE, bytes_of(map), changes, why));
    const auto entries = decoded(changes, wire::DOMAIN_MARKET_BY_PRICE);
    REQUIRE(entries.size() == 1);
    CHECK_FALSE(proto::price_less(entries[0].mantissa, entries[0].exponent, 10000, -2));
    CHECK_FALSE(proto::price_less(10000, -2, entries[0].mantissa, entries[0].exponent));
    CHECK(entries[0].field_bytes.size() > 0);
}

TEST_CASE("a map of the wrong key kind for its domain is refused", "[replay_books]") {
    std::string map;
    proto::append_map_entry(map, name_entry("VOD.L", proto::MapAction::kAdd), {});
    BookReplayer replayer;
    BookChanges changes;
    std::string why;
    CHECK_FALSE(replayer.to_changes(wire::DOMAIN_MARKET_BY_PRICE, bytes_of(map), changes, why));
    CHECK_FALSE(why.empty());
    CHECK(changes.empty());
}
