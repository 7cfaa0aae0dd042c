// Tests for proto/book_codec.h: the Map payload round trip, the strict parser's
// refusals (each a hostile shape), and the frame flag a book's frames carry.
#include "proto/book_codec.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "proto/frame.h"
#include "proto/frame_reader.h"
#include "proto/limits.h"

using namespace mdcast::proto;
namespace wire = mdcast::wire::v1;

namespace {

std::span<const uint8_t> bytes_of(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

MapEntryView price_entry(int64_t mantissa, int32_t exponent, MapAction action) {
    MapEntryView e;
    e.is_price = true;
    e.mantissa = mantissa;
    e.exponent = exponent;
    e.action = action;
    return e;
}

MapEntryView name_entry(std::string_view name, MapAction action) {
    MapEntryView e;
    e.name = name;
    e.action = action;
    return e;
}

// One MapEntry with the raw member bytes `members`.
std::string raw_map(const std::string& members) {
    std::string out = "\x0A";
    out.push_back(static_cast<char>(members.size()));
    return out + members;
}

bool decodes(const std::string& map, std::string& why) {
    std::vector<MapEntryView> out;
    return decode_map(bytes_of(map), kMaxMapEntries, out, why);
}

}  // namespace

TEST_CASE("entries round trip with keys, actions and fields", "[book_codec]") {
    std::string map;
    const FieldEntry size{3427, FieldKind::kInt, 0, 500, 0, {}};
    const FieldEntry side{3428, FieldKind::kString, 0, 0, 0, "B"};
    const FieldEntry fields[] = {size, side};
    append_map_entry(map, price_entry(10125, -2, MapAction::kAdd), fields);
    append_map_entry(map, price_entry(-7, 3, MapAction::kUpdate), std::span(fields, 1));
    append_map_entry(map, price_entry(0, 0, MapAction::kDelete), fields);  // fields left out

    std::vector<MapEntryView> out;
    std::string why;
    REQUIRE(decode_map_for(wire::DOMAIN_MARKET_BY_PRICE, bytes_of(map), 10, out, why));
    REQUIRE(out.size() == 3);
    CHECK(out[0].is_price);
    CHECK(out[0].mantissa == 10125);
    CHECK(out[0].exponent == -2);
    CHECK(out[0].action == MapAction::kAdd);
    FieldListCursor cursor(out[0].field_bytes);
    FieldEntry read;
    REQUIRE(cursor.next(read) == FieldListCursor::Step::kField);
    CHECK((read.id == 3427 && read.integer == 500));
    REQUIRE(cursor.next(read) == FieldListCursor::Step::kField);
    CHECK((read.id == 3428 && read.text == "B"));
    CHECK(cursor.next(read) == FieldListCursor::Step::kEnd);
    CHECK((out[1].mantissa == -7 && out[1].exponent == 3 && out[1].action == MapAction::kUpdate));
    CHECK(out[2].action == MapAction::kDelete);
    CHECK(out[2].field_bytes.empty());

    // The same bytes are what protobuf reads as a wire.v1.Map.
    wire::Map parsed;
    REQUIRE(parsed.ParseFromString(map));
    REQUIRE(parsed.entries_size() == 3);
    CHECK(parsed.entries(0).price().mantissa() == 10125);
    CHECK(parsed.entries(0).fields().fields(1).string_value() == "B");
    CHECK(parsed.entries(2).action() == wire::MAP_DELETE);
}

TEST_CASE("name keys round trip and must suit the domain", "[book_codec]") {
    std::string map;
    append_map_entry(map, name_entry("ORD-17", MapAction::kAdd), {});
    std::vector<MapEntryView> out;
    std::string why;
    REQUIRE(decode_map_for(wire::DOMAIN_MARKET_BY_ORDER, bytes_of(map), 10, out, why));
    CHECK(out[0].name == "ORD-17");
    CHECK(decode_map_for(wire::DOMAIN_SYMBOL_LIST, bytes_of(map), 10, out, why));
    CHECK_FALSE(decode_map_for(wire::DOMAIN_MARKET_BY_PRICE, bytes_of(map), 10, out, why));
    CHECK(why.find("name key") != std::string::npos);
    CHECK_FALSE(decode_map_for(wire::DOMAIN_MARKET_PRICE, bytes_of(map), 10, out, why));
}

TEST_CASE("the parser refuses every malformed shape", "[book_codec]") {
    std::string why;
    const std::string key = std::string("\x12\x01X", 3);  // name "X"
    const std::string add = "\x18\x01";
    CHECK(decodes(raw_map(key + add), why));
    CHECK_FALSE(decodes(raw_map(add), why));  // no key
    CHECK(why.find("exactly one key") != std::string::npos);
    CHECK_FALSE(decodes(raw_map(key + std::string("\x0A\x00", 2) + add), why));  // two keys
    CHECK_FALSE(decodes(raw_map(key), why));                                     // no action
    CHECK(why.find("action") != std::string::npos);
    CHECK_FALSE(decodes(raw_map(key + std::string("\x18\x00", 2)), why));  // action 0
    CHECK_FALSE(decodes(raw_map(key + "\x18\x04"), why));                  // action 4
    CHECK_FALSE(decodes(raw_map(key + add + add), why));                   // repeated member
    CHECK(why.find("repeated") != std::string::npos);
    CHECK_FALSE(decodes(raw_map(key + add + "\x28\x01"), why));            // unknown member 5
    CHECK_FALSE(decodes(raw_map(key + add + std::string(1, '\0')), why));  // tag 0 ends the entry
    CHECK_FALSE(decodes(raw_map(key + std::string("\x18\x03\x22\x02\x0A\x00", 6)),
                        why));  // delete with fields
    CHECK(why.find("delete") != std::string::npos);
    CHECK_FALSE(decodes(raw_map(std::string("\x12\x00", 2) + add), why));  // empty name
    CHECK_FALSE(decodes(raw_map(key + add + "\x22\x02\x0A\x05"), why));    // broken field list
    CHECK_FALSE(decodes(std::string("\x0A\x09", 2) + key + add, why));     // entry past the end
    CHECK_FALSE(decodes(std::string("\x10\x01", 2), why));                 // not an entry

    std::string long_name(kMaxBookKeyBytes + 1, 'n');
    std::string map;
    append_map_entry(map, name_entry(long_name, MapAction::kAdd), {});
    CHECK_FALSE(decodes(map, why));
    map.clear();
    append_map_entry(map, price_entry(1, kMaxPriceExponent + 1, MapAction::kAdd), {});
    CHECK_FALSE(decodes(map, why));
    CHECK(why.find("exponent") != std::string::npos);
    map.clear();
    append_map_entry(map, price_entry(1, -kMaxPriceExponent, MapAction::kAdd), {});
    CHECK(decodes(map, why));
}

TEST_CASE("an entry of too many fields, a map of too many entries are refused", "[book_codec]") {
    std::vector<FieldEntry> fields(kMaxBookEntryFields + 1,
                                   FieldEntry{1, FieldKind::kInt, 0, 1, 0, {}});
    std::string map;
    append_map_entry(map, name_entry("A", MapAction::kAdd), fields);
    std::string why;
    CHECK_FALSE(decodes(map, why));
    map.clear();
    for (int i = 0; i < 4; ++i) append_map_entry(map, price_entry(i, 0, MapAction::kAdd), {});
    std::vector<MapEntryView> out;
    CHECK(decode_map(bytes_of(map), 4, out, why));
    CHECK_FALSE(decode_map(bytes_of(map), 3, out, why));
    CHECK(why.find("more than 3") != std::string::npos);
}

TEST_CASE("a book's frames carry the map flag, other frames may not", "[book_codec]") {
    wire::Refresh refresh;
    refresh.set_item_id(1);
    CHECK(decode_frame_header(reinterpret_cast<const uint8_t*>(
                                  encode_frame_string(FrameType::kRefresh, refresh).data()))
              .flags == 0);
    refresh.set_domain(wire::DOMAIN_SYMBOL_LIST);
    append_map_entry(*refresh.mutable_map(), name_entry("VOD.L", MapAction::kAdd), {});
    const std::string frame = encode_frame_string(FrameType::kRefresh, refresh);
    CHECK(decode_frame_header(reinterpret_cast<const uint8_t*>(frame.data())).flags ==
          kFrameFlagMap);

    FrameReader reader(1 << 20, kServerToClientTypes);
    reader.append(bytes_of(frame));
    Frame out;
    REQUIRE(reader.next(out) == FrameReader::Result::kFrame);
    CHECK(frame_flags_allowed(static_cast<uint16_t>(FrameType::kUpdate), kFrameFlagMap));
    CHECK_FALSE(frame_flags_allowed(static_cast<uint16_t>(FrameType::kItemStatus), kFrameFlagMap));
    CHECK_FALSE(frame_flags_allowed(static_cast<uint16_t>(FrameType::kRefresh), 2));

    // An update with a map: flagged when framed, the map found by both decoders.
    UpdateView update;
    update.item_id = 9;
    update.item_seq = 2;
    update.trade = true;
    update.map_bytes = bytes_of(refresh.map());
    std::string update_frame;
    append_update_frame(update_frame, update);
    const auto whole = bytes_of(update_frame);
    CHECK(decode_frame_header(whole.data()).flags == kFrameFlagMap);
    UpdateView back;
    REQUIRE(decode_update(whole.subspan(kFrameHeaderBytes), back));
    CHECK(std::equal(back.map_bytes.begin(), back.map_bytes.end(), update.map_bytes.begin(),
                     update.map_bytes.end()));
    CHECK(back.trade);
    REQUIRE(decode_update_header(whole.subspan(kFrameHeaderBytes), back));
    CHECK(back.map_bytes.size() == update.map_bytes.size());
    std::string marked;
    append_trade_marked_frame(marked, whole);
    CHECK(decode_frame_header(reinterpret_cast<const uint8_t*>(marked.data())).flags ==
          kFrameFlagMap);
}
