// Tests for tools/client/update_header.h: the three-field Update decode agrees
// with protobuf on every well-formed message and refuses malformed bytes.
#include "update_header.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "wire/common.pb.h"

namespace {

using mdcast::tools::decode_update_header;
using mdcast::tools::UpdateHeader;
namespace wire = mdcast::wire::v1;

std::vector<uint8_t> bytes(const wire::Update& update) {
    const std::string text = update.SerializeAsString();
    return {text.begin(), text.end()};
}

wire::Update sample_update(uint64_t id, uint64_t seq, uint64_t stamp) {
    wire::Update update;
    update.set_item_id(id);
    update.set_item_seq(seq);
    update.set_publish_time_ns(stamp);
    auto* field = update.mutable_fields()->add_fields();
    field->set_id(22);
    field->mutable_decimal_value()->set_mantissa(10125);
    field->mutable_decimal_value()->set_exponent(-2);
    field = update.mutable_fields()->add_fields();
    field->set_id(3);
    field->set_string_value("filler text");
    update.set_conflated(true);
    return update;
}

}  // namespace

TEST_CASE("decodes id, sequence and stamp as protobuf wrote them", "[update_header]") {
    for (uint64_t id : {uint64_t{1}, uint64_t{127}, uint64_t{128}, uint64_t{1} << 40, UINT64_MAX}) {
        for (uint64_t seq : {uint64_t{0}, uint64_t{1}, uint64_t{300}, UINT64_MAX}) {
            const uint64_t stamp = 1'795'000'000'123'456'789ull;
            const auto data = bytes(sample_update(id, seq, stamp));
            UpdateHeader header;
            INFO("id " << id << " seq " << seq);
            REQUIRE(decode_update_header(data, header));
            CHECK(header.item_id == id);
            CHECK(header.item_seq == seq);
            CHECK(header.publish_time_ns == stamp);
            CHECK(header.conflated);
        }
    }
}

TEST_CASE("absent fields are zero: an unstamped update", "[update_header]") {
    auto update = sample_update(5, 6, 0);
    update.set_conflated(false);
    const auto data = bytes(update);
    UpdateHeader header;
    header.publish_time_ns = 99;
    header.conflated = true;
    REQUIRE(decode_update_header(data, header));
    CHECK(header.item_id == 5);
    CHECK(header.item_seq == 6);
    CHECK(header.publish_time_ns == 0);
    CHECK_FALSE(header.conflated);
    UpdateHeader empty;
    REQUIRE(decode_update_header({}, empty));
    CHECK(empty.item_id == 0);
}

TEST_CASE("fields in any order and unknown fields are handled like protobuf", "[update_header]") {
    // seq (2), an unknown fixed32 field 9, id (1), an unknown varint 10, stamp (3).
    const std::vector<uint8_t> data{0x10, 0x07, 0x4d, 1, 2, 3, 4, 0x08, 0x2a, 0x50, 0x96,
                                    0x01, 0x19, 1,    0, 0, 0, 0, 0,    0,    0};
    UpdateHeader header;
    REQUIRE(decode_update_header(data, header));
    CHECK(header.item_id == 42);
    CHECK(header.item_seq == 7);
    CHECK(header.publish_time_ns == 1);
    wire::Update parsed;
    REQUIRE(parsed.ParseFromArray(data.data(), static_cast<int>(data.size())));
    CHECK(parsed.item_id() == header.item_id);
    CHECK(parsed.item_seq() == header.item_seq);
}

TEST_CASE("malformed bodies are refused", "[update_header]") {
    const auto good = bytes(sample_update(1000, 2000, 3000));
    UpdateHeader header;
    // Every truncation of a message that ends inside a field is an error, as for protobuf.
    for (size_t cut = 1; cut < good.size(); ++cut) {
        const std::vector<uint8_t> part(good.begin(), good.begin() + static_cast<long>(cut));
        wire::Update parsed;
        const bool protobuf_ok = parsed.ParseFromArray(part.data(), static_cast<int>(part.size()));
        INFO("cut at " << cut);
        CHECK(decode_update_header(part, header) == protobuf_ok);
    }
    const std::vector<std::vector<uint8_t>> broken{
        {0x08},                                                                    // varint missing
        {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},  // 11-byte varint
        {0x19, 1, 2, 3},     // fixed64 cut short
        {0x22, 0x05, 1, 2},  // length past the end
        {0x0b, 0x14},        // a group closed by another field's end-group tag
        {0x00, 0x01},        // field number 0
        {0x0f},              // wire type 7
    };
    for (const auto& data : broken) CHECK_FALSE(decode_update_header(data, header));
}

// The reader is proto/protobuf_reader.h, which accepts what protobuf accepts: before,
// a 5-byte tag with bits above 32 or an unknown group was refused and the test
// client closed a connection whose updates every protobuf client reads.
TEST_CASE("5-byte tags and unknown groups are read as protobuf reads them", "[update_header]") {
    const std::string body(
        "\x88\x80\x80\x80\x10\x05"  // item_id 5 behind a 5-byte tag
        "\x7b\x08\x01\x7c"          // field 15: a group holding 1: 1
        "\x10\x07",                 // item_seq 7
        12);
    wire::Update reference;
    REQUIRE(reference.ParseFromString(body));
    UpdateHeader header;
    REQUIRE(
        decode_update_header({reinterpret_cast<const uint8_t*>(body.data()), body.size()}, header));
    CHECK(header.item_id == reference.item_id());
    CHECK(header.item_seq == reference.item_seq());
    CHECK(header.item_id == 5);
    const std::vector<uint8_t> empty_group{0x0b, 0x0c};  // field 1 as a group: unknown, skipped
    REQUIRE(reference.ParseFromArray(empty_group.data(), 2));
    CHECK(decode_update_header(empty_group, header));
}
