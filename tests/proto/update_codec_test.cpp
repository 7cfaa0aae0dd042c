// proto/update_codec.h, checked against protobuf itself: what protobuf encodes
// we decode to the same values; what we encode protobuf parses back; prefixes
// and corruptions are refused exactly when they are invalid.
#include "proto/update_codec.h"

#include <google/protobuf/stubs/common.h>

#include <catch2/catch.hpp>
#include <random>

#include "proto/frame.h"
#include "update_differential.h"
#include "wire/common.pb.h"

using namespace mdcast::proto;
namespace wire = mdcast::wire::v1;

namespace {

wire::Update sample_update() {
    wire::Update u;
    u.set_item_id(123456789);
    u.set_item_seq(42);
    u.set_publish_time_ns(1'790'000'000'123'456'789ull);
    auto* f = u.mutable_fields();
    auto* bid = f->add_fields();
    bid->set_id(22);
    bid->mutable_decimal_value()->set_mantissa(-10125);
    bid->mutable_decimal_value()->set_exponent(-2);
    auto* size = f->add_fields();
    size->set_id(30);
    size->set_int_value(-7);
    auto* mid = f->add_fields();
    mid->set_id(3404);
    mid->set_double_value(101.125);
    auto* name = f->add_fields();
    name->set_id(3);
    name->set_string_value("VOD.L \xE2\x82\xAC");
    auto* time = f->add_fields();
    time->set_id(5);
    time->set_time_ns(-5);
    auto* blank = f->add_fields();
    blank->set_id(6);
    blank->mutable_blank();
    return u;
}

std::span<const uint8_t> as_bytes(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

TEST_CASE("decode_update reads what protobuf wrote", "[update_codec]") {
    const std::string bytes = sample_update().SerializeAsString();
    UpdateView u;
    REQUIRE(decode_update(as_bytes(bytes), u));
    CHECK(u.item_id == 123456789);
    CHECK(u.item_seq == 42);
    CHECK(u.publish_time_ns == 1'790'000'000'123'456'789ull);
    CHECK_FALSE(u.conflated);
    REQUIRE(u.fields.size() == 6);
    CHECK(u.fields[0].id == 22);
    CHECK(u.fields[0].kind == FieldKind::kDecimal);
    CHECK(u.fields[0].integer == -10125);
    CHECK(u.fields[0].exponent == -2);
    CHECK(u.fields[1].kind == FieldKind::kInt);
    CHECK(u.fields[1].integer == -7);
    CHECK(u.fields[2].kind == FieldKind::kDouble);
    CHECK(u.fields[2].real == 101.125);
    CHECK(u.fields[3].kind == FieldKind::kString);
    CHECK(u.fields[3].text == "VOD.L \xE2\x82\xAC");
    CHECK(u.fields[4].kind == FieldKind::kTime);
    CHECK(u.fields[4].integer == -5);
    CHECK(u.fields[5].kind == FieldKind::kBlank);
}

TEST_CASE("append_update_frame writes what protobuf reads", "[update_codec]") {
    const wire::Update original = sample_update();
    const std::string bytes = original.SerializeAsString();
    UpdateView u;
    REQUIRE(decode_update(as_bytes(bytes), u));
    u.conflated = true;
    std::string frame = "prefix";
    append_update_frame(frame, u);
    const FrameHeader header =
        decode_frame_header(reinterpret_cast<const uint8_t*>(frame.data() + 6));
    CHECK(header.type == static_cast<uint16_t>(FrameType::kUpdate));
    REQUIRE(header.body_bytes == frame.size() - 6 - kFrameHeaderBytes);
    wire::Update back;
    REQUIRE(back.ParseFromArray(frame.data() + 6 + kFrameHeaderBytes,
                                static_cast<int>(header.body_bytes)));
    wire::Update expected = original;
    expected.set_conflated(true);
    CHECK(back.SerializeAsString() == expected.SerializeAsString());
}

TEST_CASE("trade, stands_for and the first stamp are protobuf's, both ways", "[update_codec]") {
    wire::Update original = sample_update();
    original.set_conflated(true);
    original.set_trade(true);
    original.set_stands_for(70000);  // a varint of three bytes
    original.set_first_publish_time_ns(1234567);
    const std::string bytes = original.SerializeAsString();
    for (const bool lazy : {false, true}) {  // the usual shape, and the header-only reader
        UpdateView u;
        REQUIRE(
            (lazy ? decode_update_header(as_bytes(bytes), u) : decode_update(as_bytes(bytes), u)));
        CHECK(u.trade);
        CHECK(u.stands_for == 70000);
        CHECK(u.first_publish_time_ns == 1234567);
    }
    UpdateView u;
    REQUIRE(decode_update(as_bytes(bytes), u));
    std::string frame;
    append_update_frame(frame, u);
    CHECK(frame.substr(kFrameHeaderBytes) == bytes);
    // Out of the usual order (protobuf accepts any): read the general way.
    wire::Update trade_only;
    trade_only.set_trade(true);
    wire::Update id_only;
    id_only.set_item_id(original.item_id());
    const std::string reordered = trade_only.SerializeAsString() + id_only.SerializeAsString();
    UpdateView r;
    REQUIRE(decode_update(as_bytes(reordered), r));
    CHECK(r.trade);
    CHECK(r.item_id == original.item_id());
}

TEST_CASE("a frame marked a trade is the same update with trade set", "[update_codec]") {
    const wire::Update original = sample_update();
    std::string frame;
    UpdateView u;
    const std::string body = original.SerializeAsString();  // the view points into it
    REQUIRE(decode_update(as_bytes(body), u));
    append_update_frame(frame, u);
    std::string marked = "kept";  // appended to
    append_trade_marked_frame(marked, as_bytes(frame));
    REQUIRE(marked.substr(0, 4) == "kept");
    marked.erase(0, 4);
    const auto header = decode_frame_header(reinterpret_cast<const uint8_t*>(marked.data()));
    CHECK(header.type == static_cast<uint16_t>(FrameType::kUpdate));
    REQUIRE(header.body_bytes == marked.size() - kFrameHeaderBytes);
    wire::Update parsed;
    REQUIRE(parsed.ParseFromString(marked.substr(kFrameHeaderBytes)));
    CHECK(parsed.trade());
    wire::Update expected = original;
    expected.set_trade(true);
    CHECK(parsed.SerializeAsString() == expected.SerializeAsString());
}

TEST_CASE("an update encoded without its ids, then framed with them, is protobuf's encoding",
          "[update_codec]") {
    const wire::Update original = sample_update();  // every field kind
    UpdateView u;
    const std::string bytes = original.SerializeAsString();
    REQUIRE(decode_update(as_bytes(bytes), u));
    for (const uint64_t stamp : {uint64_t{0}, u.publish_time_ns}) {
        std::string rest = "before";
        append_update_rest(rest, stamp, u.fields);
        CHECK(rest.substr(0, 6) == "before");
        rest.erase(0, 6);
        std::string frame = "prefix";
        append_update_frame(frame, u.item_id, u.item_seq, as_bytes(rest));
        const FrameHeader header =
            decode_frame_header(reinterpret_cast<const uint8_t*>(frame.data() + 6));
        REQUIRE(header.body_bytes == frame.size() - 6 - kFrameHeaderBytes);
        wire::Update expected = original;
        expected.set_publish_time_ns(stamp);
        CHECK(frame.substr(6 + kFrameHeaderBytes) == expected.SerializeAsString());
    }
}

TEST_CASE("append_update_rest matches protobuf when lengths need two or three bytes",
          "[update_codec]") {
    // The encoder writes each length as one byte and widens it afterwards:
    // values of 127, 128 and 20,000 bytes, and lists past 128 and 16,384.
    for (const size_t text_bytes : {size_t{0}, size_t{100}, size_t{120}, size_t{127}, size_t{128},
                                    size_t{200}, size_t{20'000}}) {
        for (const int copies : {1, 3, 40}) {
            wire::Update original = sample_update();
            original.clear_item_id();
            original.clear_item_seq();
            for (int i = 0; i < copies; ++i) {
                auto* text = original.mutable_fields()->add_fields();
                text->set_id(static_cast<uint32_t>(1000 + i));
                text->set_string_value(std::string(text_bytes, static_cast<char>('a' + i % 26)));
            }
            const std::string bytes = original.SerializeAsString();
            UpdateView u;
            REQUIRE(decode_update(as_bytes(bytes), u));
            std::string rest = "x";
            append_update_rest(rest, u.publish_time_ns, u.fields);
            CHECK(rest.substr(1) == bytes);
        }
    }
}

TEST_CASE("field_values_bytes is the size protobuf gives the field list", "[update_codec]") {
    // The SDK publisher bounds its frames with it (client-sdk/src/publisher_frame_limit.h).
    for (const size_t text_bytes : {size_t{0}, size_t{127}, size_t{128}, size_t{20'000}}) {
        wire::Update original = sample_update();
        auto* text = original.mutable_fields()->add_fields();
        text->set_id(70000);
        text->set_string_value(std::string(text_bytes, 't'));
        const std::string bytes = original.SerializeAsString();
        UpdateView u;
        REQUIRE(decode_update(as_bytes(bytes), u));
        CHECK(field_values_bytes(u.fields) == original.fields().ByteSizeLong());
        std::string written;
        append_field_values(written, u.fields);
        CHECK(field_values_bytes(u.fields) == written.size());
    }
}

// An Update frame around `body` (encoded by hand: fields in any order).
static std::string update_frame(const std::string& body) {
    std::string frame(kFrameHeaderBytes, '\0');
    encode_frame_header(
        {static_cast<uint32_t>(body.size()), static_cast<uint16_t>(FrameType::kUpdate), 0},
        reinterpret_cast<uint8_t*>(frame.data()));
    return frame + body;
}

// The body of a complete frame, parsed by protobuf itself.
static wire::Update parse_frame(const std::string& frame) {
    const auto header = decode_frame_header(reinterpret_cast<const uint8_t*>(frame.data()));
    REQUIRE(header.body_bytes == frame.size() - kFrameHeaderBytes);
    wire::Update parsed;
    REQUIRE(parsed.ParseFromString(frame.substr(kFrameHeaderBytes)));
    return parsed;
}

TEST_CASE("a resequenced frame is the same update with the new sequence", "[update_codec]") {
    wire::Update original = sample_update();
    original.set_trade(true);
    const uint64_t seq = GENERATE(uint64_t{1}, uint64_t{300}, uint64_t{1} << 40);
    wire::Update expected = original;
    expected.set_item_seq(seq);
    SECTION("the usual shape: rewritten in place") {
        const std::string frame = encode_frame_string(FrameType::kUpdate, original);
        std::string out = "kept";
        append_resequenced_frame(out, as_bytes(frame), seq);
        REQUIRE(out.substr(0, 4) == "kept");
        CHECK(parse_frame(out.substr(4)).SerializeAsString() == expected.SerializeAsString());
        UpdateView view;
        REQUIRE(decode_update(as_bytes(out.substr(4 + kFrameHeaderBytes)), view));
        CHECK(view.item_seq == seq);
        CHECK(view.trade);
    }
    SECTION("another order: the new sequence added at the end") {
        wire::Update tail_first;
        tail_first.set_trade(true);
        std::string body = tail_first.SerializeAsString();
        tail_first = original;
        tail_first.clear_trade();
        body += tail_first.SerializeAsString();
        const std::string frame = update_frame(body);
        std::string out;
        append_resequenced_frame(out, as_bytes(frame), seq);
        CHECK(parse_frame(out).item_seq() == seq);
        UpdateView view;
        REQUIRE(decode_update(as_bytes(out.substr(kFrameHeaderBytes)), view));
        CHECK(view.item_seq == seq);
        CHECK(view.fields.size() == 6);
    }
}

TEST_CASE("a rekeyed frame carries the new item id and sequence, the rest as it was",
          "[update_codec]") {
    wire::Update original = sample_update();
    const uint64_t id = GENERATE(uint64_t{7}, (uint64_t{2} << 40) | 99);
    const uint64_t seq = GENERATE(uint64_t{1}, uint64_t{1} << 40);
    wire::Update expected = original;
    expected.set_item_id(id);
    expected.set_item_seq(seq);
    SECTION("the usual shape") {
        std::string out;
        append_rekeyed_frame(out, as_bytes(encode_frame_string(FrameType::kUpdate, original)), id,
                             seq);
        CHECK(parse_frame(out).SerializeAsString() == expected.SerializeAsString());
    }
    SECTION("another order: both added at the end") {
        wire::Update trade_first;
        trade_first.set_trade(true);
        const std::string frame =
            update_frame(trade_first.SerializeAsString() + original.SerializeAsString());
        std::string out;
        append_rekeyed_frame(out, as_bytes(frame), id, seq);
        UpdateView view;
        REQUIRE(decode_update(as_bytes(out.substr(kFrameHeaderBytes)), view));
        CHECK(view.item_id == id);
        CHECK(view.item_seq == seq);
        CHECK(view.trade);
    }
}

TEST_CASE("append_update_frame with a view writes only the view's fields", "[update_codec]") {
    const std::string bytes = sample_update().SerializeAsString();
    UpdateView u;
    REQUIRE(decode_update(as_bytes(bytes), u));
    const std::vector<uint32_t> view{3, 22, 999};
    std::string frame;
    append_update_frame(frame, u, &view);
    wire::Update back;
    REQUIRE(back.ParseFromArray(frame.data() + kFrameHeaderBytes,
                                static_cast<int>(frame.size() - kFrameHeaderBytes)));
    REQUIRE(back.fields().fields_size() == 2);
    CHECK(back.fields().fields(0).id() == 22);
    CHECK(back.fields().fields(1).string_value() == "VOD.L \xE2\x82\xAC");
    CHECK(back.item_seq() == 42);
}

TEST_CASE("unknown fields are skipped as protobuf skips them", "[update_codec]") {
    std::string bytes = sample_update().SerializeAsString();
    bytes += std::string("\x78\x96\x01", 3);              // field 15, varint 150
    bytes += std::string("\x82\x01\x02hi", 5);            // field 16, length-delimited "hi"
    bytes += std::string("\x8d\x01\x01\x02\x03\x04", 6);  // field 17, fixed32
    wire::Update reference;
    REQUIRE(reference.ParseFromString(bytes));
    UpdateView u;
    REQUIRE(decode_update(as_bytes(bytes), u));
    CHECK(u.fields.size() == 6);
}

TEST_CASE("every prefix is accepted exactly when protobuf accepts it", "[update_codec]") {
    const std::string bytes = sample_update().SerializeAsString();
    UpdateView u;
    for (size_t n = 0; n <= bytes.size(); ++n) {
        const std::string prefix = bytes.substr(0, n);
        wire::Update reference;
        INFO("prefix of " << n << " bytes");
        CHECK(decode_update(as_bytes(prefix), u) == reference.ParseFromString(prefix));
    }
}

TEST_CASE("corrupted bytes never crash and agree with protobuf", "[update_codec]") {
    google::protobuf::LogSilencer quiet;  // protobuf logs every invalid UTF-8 string it refuses
    const std::string bytes = sample_update().SerializeAsString();
    std::mt19937 random(12345);
    UpdateView u;
    for (int round = 0; round < 20000; ++round) {
        std::string corrupt = bytes;
        const int flips = 1 + static_cast<int>(random() % 3);
        for (int i = 0; i < flips; ++i)
            corrupt[random() % corrupt.size()] = static_cast<char>(random());
        INFO("round " << round);
        CHECK(mdcast::proto::testing::update_disagreement(as_bytes(corrupt), u).empty());
        if (decode_update(as_bytes(corrupt), u))
            CHECK(mdcast::proto::testing::lazy_read_disagreement(as_bytes(corrupt), u).empty());
    }
}

TEST_CASE("malformed updates are refused", "[update_codec]") {
    UpdateView u;
    const auto refuse = [&](const std::string& bytes) {
        return !decode_update(as_bytes(bytes), u);
    };
    CHECK(refuse(
        std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12)));  // 11-byte varint
    CHECK(refuse(std::string("\x22\x05\x0a", 3)));  // field list longer than the body
    CHECK(refuse(std::string("\x00\x01", 2)));      // field number 0
    CHECK(refuse(std::string("\x0f", 1)));          // wire type 7
    CHECK(refuse(std::string("\x19\x01\x02", 3)));  // truncated fixed64
    // A string field with invalid UTF-8, which every client's protobuf would refuse.
    for (const std::string& bad :
         {std::string("\xff"), std::string("\xc0\x80"), std::string("\xed\xa0\x80"),
          std::string("\xf4\x90\x80\x80"), std::string("\xe2\x82")}) {
        const std::string value =
            std::string("\x08\x03\x2a", 3) + static_cast<char>(bad.size()) + bad;
        const std::string list = std::string("\x0a") + static_cast<char>(value.size()) + value;
        const std::string body = std::string("\x22") + static_cast<char>(list.size()) + list;
        google::protobuf::LogSilencer quiet;
        wire::Update reference;
        CHECK_FALSE(reference.ParseFromString(body));
        CHECK(refuse(body));
    }
    CHECK_FALSE(refuse(""));  // empty is a valid (empty) update
}

// Each of the following was a disagreement with protobuf 3.21 found by the
// differential fuzz target (tests/fuzz/update_decoder_fuzz.cpp) or issue 12:
// bytes the distributor forwarded that clients refuse, or values that differ.
namespace {

// `tag`, a varint length and `body`.
std::string delimited(char tag, const std::string& body) {
    std::string out(1, tag);
    for (size_t n = body.size();; n >>= 7) {
        out += static_cast<char>(n >= 0x80 ? (n & 0x7f) | 0x80 : n);
        if (n < 0x80) break;
    }
    return out + body;
}

// An Update holding one FieldValue whose body is `value_body`.
std::string field_value(const std::string& value_body) {
    return delimited('\x22', delimited('\x0a', value_body));
}

// Also the SDK's lazy reading (header, then the field list by cursor) where
// decode_update accepts.
std::string agreement(const std::string& bytes) {
    UpdateView u;
    const std::string why = mdcast::proto::testing::update_disagreement(as_bytes(bytes), u);
    if (!why.empty() || !decode_update(as_bytes(bytes), u)) return why;
    return mdcast::proto::testing::lazy_read_disagreement(as_bytes(bytes), u);
}

}  // namespace

TEST_CASE("a tag longer than 5 bytes is refused, as protobuf refuses it", "[update_codec]") {
    const std::string six_byte_tag("\x88\x80\x80\x80\x80\x00\x05", 7);  // field 1 in 6 bytes
    UpdateView u;
    CHECK_FALSE(decode_update(as_bytes(six_byte_tag), u));
    CHECK(agreement(six_byte_tag).empty());
}

TEST_CASE("a 5-byte tag loses its bits above 32, as in protobuf", "[update_codec]") {
    const std::string tag_with_high_bits("\x88\x80\x80\x80\x10\x05", 6);  // 2^32 + 8: field 1
    UpdateView u;
    REQUIRE(decode_update(as_bytes(tag_with_high_bits), u));
    CHECK(u.item_id == 5);
    CHECK(agreement(tag_with_high_bits).empty());
}

TEST_CASE("a length longer than 5 bytes or past 2^31 is refused", "[update_codec]") {
    UpdateView u;
    const std::string six_byte_length("\x22\x80\x80\x80\x80\x80\x00", 7);
    CHECK_FALSE(decode_update(as_bytes(six_byte_length), u));
    CHECK(agreement(six_byte_length).empty());
    const std::string huge_length("\x22\x80\x80\x80\x80\x08", 6);
    CHECK_FALSE(decode_update(as_bytes(huge_length), u));
    CHECK(agreement(huge_length).empty());
    const std::string five_byte_zero("\x22\x80\x80\x80\x80\x00", 6);  // valid, if wasteful
    CHECK(decode_update(as_bytes(five_byte_zero), u));
    CHECK(agreement(five_byte_zero).empty());
}

TEST_CASE("a sint32 exponent is decoded from its low 32 bits, as protobuf does", "[update_codec]") {
    // Decimal { exponent = varint 2^32 + 3 }: the low 32 bits are zigzag 3, i.e. -2.
    const std::string decimal("\x10\x83\x80\x80\x80\x10", 6);
    const std::string body = field_value("\x08\x16" + delimited('\x1a', decimal));
    UpdateView u;
    REQUIRE(decode_update(as_bytes(body), u));
    REQUIRE(u.fields.size() == 1);
    CHECK(u.fields[0].exponent == -2);
    CHECK(agreement(body).empty());
}

TEST_CASE("a uint32 field id keeps its low 32 bits, as protobuf does", "[update_codec]") {
    const std::string body = field_value(std::string("\x08\x96\x80\x80\x80\x10\x10\x02", 8));
    UpdateView u;
    REQUIRE(decode_update(as_bytes(body), u));
    REQUIRE(u.fields.size() == 1);
    CHECK(u.fields[0].id == 22);
    CHECK(agreement(body).empty());
}

TEST_CASE("a repeated Decimal is merged into the first, as protobuf merges it", "[update_codec]") {
    // decimal_value { mantissa 5 exponent -2 } then decimal_value { mantissa 7 }: 7e-2.
    const std::string body =
        field_value(std::string("\x08\x16\x1a\x04\x08\x0a\x10\x03\x1a\x02\x08\x0e", 12));
    UpdateView u;
    REQUIRE(decode_update(as_bytes(body), u));
    REQUIRE(u.fields.size() == 1);
    CHECK(u.fields[0].integer == 7);
    CHECK(u.fields[0].exponent == -2);
    CHECK(agreement(body).empty());
    // Another oneof member in between starts the decimal afresh.
    const std::string reset =
        field_value(std::string("\x08\x16\x1a\x04\x08\x0a\x10\x03\x10\x02\x1a\x02\x08\x0e", 14));
    REQUIRE(decode_update(as_bytes(reset), u));
    CHECK(u.fields[0].exponent == 0);
    CHECK(agreement(reset).empty());
}

TEST_CASE("unknown groups are skipped as protobuf skips them, within its nesting limit",
          "[update_codec]") {
    UpdateView u;
    const std::string group("\x7b\x08\x01\x7c\x08\x09",
                            6);  // field 15 group { 1: 1 }, then item_id 9
    REQUIRE(decode_update(as_bytes(group), u));
    CHECK(u.item_id == 9);
    CHECK(agreement(group).empty());
    const std::string mismatched("\x7b\x84\x01", 3);  // ends with field 16's end-group tag
    CHECK_FALSE(decode_update(as_bytes(mismatched), u));
    CHECK(agreement(mismatched).empty());
    const std::string unterminated("\x7b\x08\x01", 3);
    CHECK_FALSE(decode_update(as_bytes(unterminated), u));
    CHECK(agreement(unterminated).empty());
    const std::string stray_end("\x7c", 1);
    CHECK_FALSE(decode_update(as_bytes(stray_end), u));
    CHECK(agreement(stray_end).empty());
    // 100 nested groups fit protobuf's recursion limit; 101 do not.
    const auto nested = [](int depth) {
        return std::string(static_cast<size_t>(depth), '\x7b') +
               std::string(static_cast<size_t>(depth), '\x7c');
    };
    CHECK(decode_update(as_bytes(nested(100)), u));
    CHECK_FALSE(decode_update(as_bytes(nested(101)), u));
    CHECK(agreement(nested(100)).empty());
    CHECK(agreement(nested(101)).empty());
    // Inside a Decimal three levels are already spent (FieldList, FieldValue, Decimal).
    for (int depth : {96, 97, 98}) {
        const std::string body = field_value(delimited('\x1a', nested(depth)));
        INFO("depth " << depth);
        CHECK(decode_update(as_bytes(body), u) == (depth <= 97));
        CHECK(agreement(body).empty());
    }
}

TEST_CASE("every FieldValue shape near the usual encoding decodes as protobuf decodes it",
          "[update_codec]") {
    // The decoder reads the usual shapes (id, then one member, one-byte tags and lengths) in
    // one straight pass and everything else the general way; both must agree with protobuf,
    // whether they accept the bytes or not.
    using S = std::string;
    const S id("\x08\x16", 2);
    const S decimal("\x08\x95\x9e\x01\x10\x03", 6);  // mantissa 10125, exponent -2
    const S text("VOD.L \xE2\x82\xAC");
    const std::vector<S> shapes = {
        id + S("\x10\x8e\x01", 3),                         // int
        id + delimited('\x1a', decimal),                   // decimal
        id + delimited('\x1a', S("\x08\x95\x9e\x01", 4)),  // decimal, mantissa only
        id + delimited('\x1a', S("\x10\x03", 2)),          // decimal, exponent only
        id + delimited('\x1a', S()),                       // decimal zero
        id + delimited('\x1a', S("\x10\x03\x08\x0a", 4)),  // decimal members reversed
        id + delimited('\x1a', S("\x08\x0a\x08\x0c", 4)),  // mantissa twice
        id + delimited('\x1a', S("\x08\x0a\x18\x01", 4)),  // unknown Decimal member
        id + S("\x1a\x05", 2) + decimal,                   // decimal length one short
        id + S("\x1a\x07", 2) + decimal,                   // decimal length past the end
        id + S("\x21") + S(8, '\x40'),                     // double
        id + S("\x21") + S(7, '\x40'),                     // double cut short
        id + S("\x31") + S(8, '\x01'),                     // time
        id + delimited('\x2a', text),                      // string
        id + delimited('\x2a', S("\xC0\xAF", 2)),          // string, overlong UTF-8
        id + delimited('\x2a', S(200, 'x')),               // string with a two-byte length
        id + S("\x10\x8e\x01\x10\x02", 5),                 // int twice
        id + S("\x10\x8e\x01\x21", 4) + S(8, '\x40'),      // int then double
        id + S("\x10\x8e\x01\x08\x17", 5),                 // id again after the member
        S("\x10\x8e\x01", 3) + id,                         // member before the id
        id,                                                // id only
        S("\x08\x96\x01\x10\x02", 5),                      // two-byte id
        S("\x08\x96\x80\x80\x80\x10\x10\x02", 8),          // id with bits past 32
        id + S("\x10\x8e", 2),                             // int cut short
        id + S("\x10") + S(11, '\xff'),                    // int varint over 10 bytes
        id + S("\x18\x01", 2),                             // unknown member (field 3 as varint)
        id + delimited('\x3a', S()),                       // blank
    };
    for (const S& shape : shapes) {
        INFO("FieldValue bytes of length " << shape.size());
        CHECK(agreement(field_value(shape)).empty());
    }
}

TEST_CASE("every Update shape near the usual encoding decodes as protobuf decodes it",
          "[update_codec]") {
    // The usual Update (its fields in order, once each, one-byte tags, a field list length of
    // one or two bytes) is read in one pass, anything else the general way; both must agree
    // with protobuf, and the header-only decode must find the same header and field list.
    using S = std::string;
    const S id("\x08\x95\x9a\xef\x3a", 5), seq("\x10\x2a", 2), time = S("\x19") + S(8, '\x07');
    const S one = delimited('\x0a', S("\x08\x16\x10\x02", 4));
    S many;
    for (int i = 0; i < 40; ++i) many += one;  // 240 bytes: a two-byte length
    const S fields = delimited('\x22', one), big = delimited('\x22', many);
    const S conflated("\x28\x01", 2);
    const std::vector<S> shapes = {
        id + seq + time + fields,
        id + seq + time + big + conflated,
        id + seq + fields,
        seq + time,
        S(),
        id,
        seq + id + time + fields,                     // out of order
        id + seq + time + fields + id,                // item id twice
        id + seq + time + fields + fields,            // two field lists: protobuf merges them
        id + seq + time + S("\x22\x07", 2) + one,     // length past the end
        id + seq + time + S("\x22\x05", 2) + one,     // length one short
        id + seq + S("\x19") + S(5, '\x07'),          // time cut short
        id + seq + time + fields + S("\x30\x01", 2),  // unknown field 6
        id + seq + time + delimited('\x22', many + many + many),  // 720 bytes
        S("\x08") + S(11, '\xff'),                                // item id varint over 10 bytes
        id + seq + time + fields + S("\x28\x80", 2),              // conflated cut short
    };
    for (const S& shape : shapes) {
        INFO("Update bytes of length " << shape.size());
        CHECK(agreement(shape).empty());
        UpdateView full, header;
        const bool full_ok = decode_update(as_bytes(shape), full);
        const bool header_ok = decode_update_header(as_bytes(shape), header);
        if (full_ok && header_ok) {
            CHECK(header.item_id == full.item_id);
            CHECK(header.item_seq == full.item_seq);
            CHECK(header.publish_time_ns == full.publish_time_ns);
            CHECK(header.conflated == full.conflated);
            CHECK(header.field_bytes.data() == full.field_bytes.data());
            CHECK(header.field_bytes.size() == full.field_bytes.size());
            CHECK(header.fields.empty());
        }
    }
}
