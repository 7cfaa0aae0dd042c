// Tests for proto/frame.h (header codec, encode_frame) and proto/frame_reader.h
// (incremental decoding of a hostile TCP byte stream).
#include "proto/frame_reader.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "proto/frame.h"
#include "wire/common.pb.h"
#include "wire/session.pb.h"

namespace {

using mdcast::proto::decode_frame_header;
using mdcast::proto::encode_frame;
using mdcast::proto::encode_frame_header;
using mdcast::proto::encode_frame_string;
using mdcast::proto::Frame;
using mdcast::proto::FrameError;
using mdcast::proto::FrameHeader;
using mdcast::proto::FrameReader;
using mdcast::proto::FrameType;
using mdcast::proto::FrameTypeSet;
using mdcast::proto::kFrameHeaderBytes;
namespace wire = mdcast::wire::v1;

using Result = FrameReader::Result;

const FrameTypeSet kAll{
    FrameType::kLoginRequest, FrameType::kLoginResponse, FrameType::kPing,
    FrameType::kPong,         FrameType::kClose,         FrameType::kRefresh,
    FrameType::kUpdate,       FrameType::kItemStatus,    FrameType::kDirectory,
    FrameType::kSubscribe,    FrameType::kHeartbeat,     FrameType::kImageRequest};

std::span<const uint8_t> bytes_of(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string body_of(const Frame& frame) {
    return {reinterpret_cast<const char*>(frame.body.data()), frame.body.size()};
}

std::string whole_of(const Frame& frame) {
    return {reinterpret_cast<const char*>(frame.whole.data()), frame.whole.size()};
}

// A raw header with arbitrary (possibly invalid) fields.
std::string raw_header(uint32_t body, uint16_t type, uint16_t flags) {
    std::string out(kFrameHeaderBytes, '\0');
    encode_frame_header(FrameHeader{body, type, flags}, reinterpret_cast<uint8_t*>(out.data()));
    return out;
}

wire::Ping make_ping(uint64_t t) {
    wire::Ping ping;
    ping.set_sent_time_ns(t);
    return ping;
}

wire::Update make_update(uint64_t item, uint64_t seq, int n_fields) {
    wire::Update update;
    update.set_item_id(item);
    update.set_item_seq(seq);
    for (int i = 0; i < n_fields; ++i) {
        auto* f = update.mutable_fields()->add_fields();
        f->set_id(static_cast<uint32_t>(i + 1));
        f->set_int_value(i * 1000 - 7);
    }
    return update;
}

}  // namespace

TEST_CASE("frame header is 8 bytes in network byte order", "[frame]") {
    uint8_t out[kFrameHeaderBytes];
    encode_frame_header(FrameHeader{0x01020304, 0x0506, 0x0708}, out);
    const uint8_t expected[kFrameHeaderBytes] = {1, 2, 3, 4, 5, 6, 7, 8};
    CHECK(std::memcmp(out, expected, kFrameHeaderBytes) == 0);

    const FrameHeader back = decode_frame_header(out);
    CHECK(back.body_bytes == 0x01020304u);
    CHECK(back.type == 0x0506);
    CHECK(back.flags == 0x0708);
}

TEST_CASE("frame header round trips extreme values", "[frame]") {
    uint8_t out[kFrameHeaderBytes];
    encode_frame_header(FrameHeader{0xFFFFFFFFu, 0xFFFF, 0}, out);
    const uint8_t expected[kFrameHeaderBytes] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0};
    CHECK(std::memcmp(out, expected, kFrameHeaderBytes) == 0);
    const FrameHeader back = decode_frame_header(out);
    CHECK(back.body_bytes == 0xFFFFFFFFu);
    CHECK(back.type == 0xFFFF);
    CHECK(back.flags == 0);
}

TEST_CASE("encode_frame writes header then protobuf body", "[frame]") {
    const wire::Update update = make_update(42, 7, 3);
    const std::string body = update.SerializeAsString();
    REQUIRE(mdcast::proto::frame_bytes(update) == kFrameHeaderBytes + body.size());

    std::vector<uint8_t> out(mdcast::proto::frame_bytes(update));
    const size_t written = encode_frame(FrameType::kUpdate, update, out.data());
    CHECK(written == out.size());

    const FrameHeader header = decode_frame_header(out.data());
    CHECK(header.body_bytes == body.size());
    CHECK(header.type == static_cast<uint16_t>(FrameType::kUpdate));
    CHECK(header.flags == 0);
    CHECK(std::string(reinterpret_cast<const char*>(out.data()) + kFrameHeaderBytes, body.size()) ==
          body);

    // The type bytes are 0x00 0x15 (21) on the wire.
    CHECK(out[4] == 0x00);
    CHECK(out[5] == 21);

    // The string helper produces the same bytes.
    const std::string s = encode_frame_string(FrameType::kUpdate, update);
    CHECK(s == std::string(reinterpret_cast<const char*>(out.data()), out.size()));
}

TEST_CASE("empty message encodes as a header with zero body length", "[frame]") {
    const std::string s = encode_frame_string(FrameType::kPing, wire::Ping{});
    REQUIRE(s.size() == kFrameHeaderBytes);
    const std::string expected("\0\0\0\0\0\x03\0\0", 8);
    CHECK(s == expected);
}

TEST_CASE("frame type names and type sets", "[frame]") {
    CHECK(mdcast::proto::frame_type_name(FrameType::kRefresh) == "Refresh");
    CHECK(mdcast::proto::frame_type_name(FrameType::kDirectoryQuery) == "DirectoryQuery");
    CHECK(mdcast::proto::frame_type_name(static_cast<FrameType>(999)) == "unknown");

    CHECK(
        mdcast::proto::kClientToServerTypes.contains(static_cast<uint16_t>(FrameType::kSubscribe)));
    CHECK_FALSE(
        mdcast::proto::kClientToServerTypes.contains(static_cast<uint16_t>(FrameType::kRefresh)));
    CHECK(mdcast::proto::kBackboneDataTypes.contains(static_cast<uint16_t>(FrameType::kHeartbeat)));
    CHECK_FALSE(mdcast::proto::kBackboneDataTypes.contains(0));
    // Out of the 64-bit range: never contained, never undefined behaviour.
    CHECK_FALSE(kAll.contains(64));
    CHECK_FALSE(kAll.contains(0xFFFF));
}

TEST_CASE("reader decodes one frame", "[frame_reader]") {
    FrameReader reader(1024, kAll);
    const wire::Ping ping = make_ping(123456789);
    const std::string frame_bytes = encode_frame_string(FrameType::kPing, ping);
    reader.append(bytes_of(frame_bytes));

    Frame frame{};
    REQUIRE(reader.next(frame) == Result::kFrame);
    CHECK(frame.type == FrameType::kPing);
    CHECK(whole_of(frame) == frame_bytes);
    CHECK(frame.whole.size() == kFrameHeaderBytes + frame.body.size());
    CHECK(frame.body.data() == frame.whole.data() + kFrameHeaderBytes);

    wire::Ping back;
    REQUIRE(back.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size())));
    CHECK(back.sent_time_ns() == 123456789u);

    CHECK(reader.next(frame) == Result::kNeedMore);
    CHECK(reader.buffered_bytes() == 0);
    CHECK(reader.error() == FrameError::kNone);
}

TEST_CASE("reader with no data needs more", "[frame_reader]") {
    FrameReader reader(1024, kAll);
    Frame frame{};
    CHECK(reader.next(frame) == Result::kNeedMore);
    CHECK(reader.max_body_bytes() == 1024);
}

TEST_CASE("reader copes with a frame fed one byte at a time", "[frame_reader]") {
    FrameReader reader(4096, kAll);
    const wire::Update update = make_update(9, 99, 20);
    const std::string bytes = encode_frame_string(FrameType::kUpdate, update);
    REQUIRE(bytes.size() > kFrameHeaderBytes + 20);

    Frame frame{};
    for (size_t i = 0; i + 1 < bytes.size(); ++i) {
        reader.append(bytes_of(bytes).subspan(i, 1));
        INFO("after " << (i + 1) << " of " << bytes.size() << " bytes");
        REQUIRE(reader.next(frame) == Result::kNeedMore);
        REQUIRE(reader.buffered_bytes() == i + 1);
    }
    reader.append(bytes_of(bytes).subspan(bytes.size() - 1, 1));
    REQUIRE(reader.next(frame) == Result::kFrame);
    CHECK(frame.type == FrameType::kUpdate);
    CHECK(whole_of(frame) == bytes);
    CHECK(body_of(frame) == update.SerializeAsString());
    CHECK(reader.next(frame) == Result::kNeedMore);
}

TEST_CASE("reader copes with a stream split at every byte boundary", "[frame_reader]") {
    // Two frames back to back, split into two appends at every possible offset.
    const std::string a = encode_frame_string(FrameType::kUpdate, make_update(1, 1, 3));
    const std::string b = encode_frame_string(FrameType::kPing, make_ping(5));
    const std::string stream = a + b;
    for (size_t split = 0; split <= stream.size(); ++split) {
        INFO("split at " << split);
        FrameReader reader(1024, kAll);
        std::vector<std::string> got;
        Frame frame{};
        reader.append(bytes_of(stream).subspan(0, split));
        while (reader.next(frame) == Result::kFrame) got.push_back(whole_of(frame));
        reader.append(bytes_of(stream).subspan(split));
        Result r;
        while ((r = reader.next(frame)) == Result::kFrame) got.push_back(whole_of(frame));
        CHECK(r == Result::kNeedMore);
        REQUIRE(got.size() == 2);
        CHECK(got[0] == a);
        CHECK(got[1] == b);
        CHECK(reader.buffered_bytes() == 0);
    }
}

TEST_CASE("reader decodes many frames from one append", "[frame_reader]") {
    FrameReader reader(1024, kAll);
    std::string stream;
    std::vector<std::string> sent;
    for (int i = 0; i < 100; ++i) {
        sent.push_back(encode_frame_string(FrameType::kUpdate, make_update(7, 1000 + i, i % 5)));
        stream += sent.back();
    }
    reader.append(bytes_of(stream));

    Frame frame{};
    for (int i = 0; i < 100; ++i) {
        REQUIRE(reader.next(frame) == Result::kFrame);
        CHECK(whole_of(frame) == sent[i]);
        wire::Update back;
        REQUIRE(back.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size())));
        CHECK(back.item_seq() == static_cast<uint64_t>(1000 + i));
        CHECK(back.fields().fields_size() == i % 5);
    }
    CHECK(reader.next(frame) == Result::kNeedMore);
    CHECK(reader.buffered_bytes() == 0);
}

TEST_CASE("reader decodes frames split across uneven appends", "[frame_reader]") {
    std::string stream;
    std::vector<std::string> sent;
    for (int i = 0; i < 30; ++i) {
        sent.push_back(encode_frame_string(FrameType::kUpdate, make_update(3, i, i % 7)));
        stream += sent.back();
    }
    for (size_t chunk : {2u, 3u, 7u, 13u, 64u, 255u}) {
        INFO("chunk " << chunk);
        FrameReader reader(1024, kAll);
        std::vector<std::string> got;
        Frame frame{};
        for (size_t at = 0; at < stream.size(); at += chunk) {
            reader.append(bytes_of(stream).subspan(at, std::min(chunk, stream.size() - at)));
            while (reader.next(frame) == Result::kFrame) got.push_back(whole_of(frame));
        }
        CHECK(got == sent);
        CHECK(reader.buffered_bytes() == 0);
    }
}

TEST_CASE("reader accepts a zero-length body", "[frame_reader]") {
    FrameReader reader(1024, kAll);
    const std::string empty = encode_frame_string(FrameType::kPing, wire::Ping{});
    const std::string after = encode_frame_string(FrameType::kPing, make_ping(77));
    reader.append(bytes_of(empty + after));

    Frame frame{};
    REQUIRE(reader.next(frame) == Result::kFrame);
    CHECK(frame.type == FrameType::kPing);
    CHECK(frame.body.empty());
    CHECK(frame.whole.size() == kFrameHeaderBytes);
    REQUIRE(reader.next(frame) == Result::kFrame);
    CHECK(whole_of(frame) == after);
    CHECK(reader.next(frame) == Result::kNeedMore);
}

TEST_CASE("reader with zero max body accepts only empty bodies", "[frame_reader]") {
    FrameReader reader(0, kAll);
    reader.append(bytes_of(encode_frame_string(FrameType::kPing, wire::Ping{})));
    Frame frame{};
    REQUIRE(reader.next(frame) == Result::kFrame);
    reader.append(bytes_of(raw_header(1, static_cast<uint16_t>(FrameType::kPing), 0)));
    CHECK(reader.next(frame) == Result::kError);
    CHECK(reader.error() == FrameError::kTooLarge);
}

TEST_CASE("body exactly at the limit is accepted, one more byte is refused", "[frame_reader]") {
    const std::string at_limit =
        raw_header(16, static_cast<uint16_t>(FrameType::kRefresh), 0) + std::string(16, 'x');
    {
        FrameReader reader(16, kAll);
        reader.append(bytes_of(at_limit));
        Frame frame{};
        REQUIRE(reader.next(frame) == Result::kFrame);
        CHECK(frame.body.size() == 16);
    }
    {
        FrameReader reader(15, kAll);
        reader.append(bytes_of(at_limit));
        Frame frame{};
        CHECK(reader.next(frame) == Result::kError);
        CHECK(reader.error() == FrameError::kTooLarge);
    }
}

TEST_CASE("oversize length is refused as soon as the header arrives", "[frame_reader]") {
    FrameReader reader(1000, kAll);
    const std::string header = raw_header(1001, static_cast<uint16_t>(FrameType::kUpdate), 0);
    Frame frame{};
    // Seven header bytes: not yet decidable.
    reader.append(bytes_of(header).subspan(0, 7));
    CHECK(reader.next(frame) == Result::kNeedMore);
    CHECK(reader.error() == FrameError::kNone);
    // The eighth byte completes the header: refused without any body bytes.
    reader.append(bytes_of(header).subspan(7));
    CHECK(reader.next(frame) == Result::kError);
    CHECK(reader.error() == FrameError::kTooLarge);
    CHECK(mdcast::proto::frame_error_name(reader.error()) == "frame_too_large");
    CHECK_THAT(reader.error_text(), Catch::Contains("1001") && Catch::Contains("1000"));
}

TEST_CASE("a 4 GiB length is refused, not buffered", "[frame_reader]") {
    FrameReader reader(1 << 20, kAll);
    reader.append(bytes_of(raw_header(0xFFFFFFFFu, static_cast<uint16_t>(FrameType::kUpdate), 0)));
    Frame frame{};
    CHECK(reader.next(frame) == Result::kError);
    CHECK(reader.error() == FrameError::kTooLarge);
}

TEST_CASE("a type not in the accepted set is refused", "[frame_reader]") {
    SECTION("known type, wrong direction") {
        FrameReader reader(1024, mdcast::proto::kClientToServerTypes);
        reader.append(bytes_of(encode_frame_string(FrameType::kRefresh, wire::Refresh{})));
        Frame frame{};
        CHECK(reader.next(frame) == Result::kError);
        CHECK(reader.error() == FrameError::kUnknownType);
        CHECK(mdcast::proto::frame_error_name(reader.error()) == "unknown_frame_type");
        CHECK_THAT(reader.error_text(), Catch::Contains("20"));
    }
    SECTION("type number never defined") {
        for (uint16_t type : {uint16_t{0}, uint16_t{6}, uint16_t{63}, uint16_t{64}, uint16_t{1000},
                              uint16_t{0xFFFF}}) {
            INFO("type " << type);
            FrameReader reader(1024, kAll);
            reader.append(bytes_of(raw_header(0, type, 0)));
            Frame frame{};
            CHECK(reader.next(frame) == Result::kError);
            CHECK(reader.error() == FrameError::kUnknownType);
        }
    }
    SECTION("refused before the body arrives") {
        FrameReader reader(1024, kAll);
        reader.append(bytes_of(raw_header(500, 999, 0)));
        Frame frame{};
        CHECK(reader.next(frame) == Result::kError);
        CHECK(reader.error() == FrameError::kUnknownType);
    }
}

TEST_CASE("non-zero flags are refused", "[frame_reader]") {
    for (uint16_t flags : {uint16_t{1}, uint16_t{0x8000}, uint16_t{0xFFFF}}) {
        INFO("flags " << flags);
        FrameReader reader(1024, kAll);
        reader.append(bytes_of(raw_header(0, static_cast<uint16_t>(FrameType::kPing), flags)));
        Frame frame{};
        CHECK(reader.next(frame) == Result::kError);
        CHECK(reader.error() == FrameError::kBadFlags);
        CHECK(mdcast::proto::frame_error_name(reader.error()) == "bad_frame_flags");
    }
}

TEST_CASE("reader stays in error once a bad frame was seen", "[frame_reader]") {
    FrameReader reader(1024, kAll);
    const std::string good = encode_frame_string(FrameType::kPing, make_ping(1));
    reader.append(
        bytes_of(good + raw_header(0, static_cast<uint16_t>(FrameType::kPing), 4) + good));
    Frame frame{};
    REQUIRE(reader.next(frame) == Result::kFrame);
    CHECK(reader.next(frame) == Result::kError);
    const std::string text = reader.error_text();
    CHECK_FALSE(text.empty());
    // A good frame after the bad one is never delivered, even after more input.
    CHECK(reader.next(frame) == Result::kError);
    reader.append(bytes_of(good));
    CHECK(reader.next(frame) == Result::kError);
    CHECK(reader.error() == FrameError::kBadFlags);
    CHECK(reader.error_text() == text);
}

TEST_CASE("garbage bytes are an error, never a frame", "[frame_reader]") {
    // A deterministic pseudo-random stream: the reader must never crash and, since
    // the first header is garbage, must report an error rather than a frame.
    uint32_t state = 12345;
    auto rnd = [&] {
        state = state * 1103515245u + 12345u;
        return static_cast<uint8_t>(state >> 16);
    };
    for (int round = 0; round < 200; ++round) {
        std::vector<uint8_t> junk(64);
        for (auto& b : junk) b = rnd();
        junk[6] |= 0x01;  // non-zero flags guarantee the first header is invalid
        FrameReader reader(1024, kAll);
        reader.append(junk);
        Frame frame{};
        REQUIRE(reader.next(frame) == Result::kError);
        CHECK(reader.error() != FrameError::kNone);
    }
    // Text is not a frame either: "GET / HTTP/1.1" decodes to a huge length.
    FrameReader reader(65536, kAll);
    const std::string http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    reader.append(bytes_of(http));
    Frame frame{};
    CHECK(reader.next(frame) == Result::kError);
    CHECK(reader.error() == FrameError::kTooLarge);
}

TEST_CASE("prepare/commit path decodes what was written in place", "[frame_reader]") {
    FrameReader reader(1024, kAll);
    std::string stream;
    for (int i = 0; i < 10; ++i) {
        stream += encode_frame_string(FrameType::kUpdate, make_update(11, i, 4));
    }
    std::vector<std::string> got;
    Frame frame{};
    size_t at = 0;
    while (at < stream.size()) {
        // Like a socket read: ask for room, fill part of it, commit what was "read".
        const std::span<uint8_t> space = reader.prepare(17);
        REQUIRE(space.size() >= 17);
        const size_t n = std::min<size_t>(17, stream.size() - at);
        std::memcpy(space.data(), stream.data() + at, n);
        reader.commit(n);
        at += n;
        while (reader.next(frame) == Result::kFrame) got.push_back(whole_of(frame));
    }
    REQUIRE(got.size() == 10);
    for (int i = 0; i < 10; ++i) {
        wire::Update back;
        REQUIRE(back.ParseFromString(got[i].substr(kFrameHeaderBytes)));
        CHECK(back.item_seq() == static_cast<uint64_t>(i));
    }
}

TEST_CASE("commit of zero bytes changes nothing", "[frame_reader]") {
    FrameReader reader(1024, kAll);
    (void)reader.prepare(4096);
    reader.commit(0);
    CHECK(reader.buffered_bytes() == 0);
    Frame frame{};
    CHECK(reader.next(frame) == Result::kNeedMore);
}

TEST_CASE("prepare keeps a partial frame intact while compacting", "[frame_reader]") {
    FrameReader reader(1024, kAll);
    const std::string a = encode_frame_string(FrameType::kUpdate, make_update(1, 1, 6));
    const std::string b = encode_frame_string(FrameType::kUpdate, make_update(2, 2, 6));
    // a complete + half of b, then consume a; prepare must move b's half to the front.
    reader.append(bytes_of(a + b.substr(0, b.size() / 2)));
    Frame frame{};
    REQUIRE(reader.next(frame) == Result::kFrame);
    CHECK(whole_of(frame) == a);
    CHECK(reader.next(frame) == Result::kNeedMore);
    CHECK(reader.buffered_bytes() == b.size() / 2);
    reader.append(bytes_of(b.substr(b.size() / 2)));
    REQUIRE(reader.next(frame) == Result::kFrame);
    CHECK(whole_of(frame) == b);
}

TEST_CASE("whole span covers exactly header and body", "[frame_reader]") {
    FrameReader reader(1024, kAll);
    const std::string a = encode_frame_string(FrameType::kUpdate, make_update(1, 1, 2));
    const std::string b = encode_frame_string(FrameType::kPing, make_ping(9));
    reader.append(bytes_of(a + b));
    Frame first{};
    REQUIRE(reader.next(first) == Result::kFrame);
    CHECK(first.whole.size() == a.size());
    CHECK(first.whole.data() + kFrameHeaderBytes == first.body.data());
    CHECK(first.body.size() == a.size() - kFrameHeaderBytes);
    CHECK(whole_of(first) == a);
    // Forwarding: the whole span is a valid frame on its own.
    FrameReader again(1024, kAll);
    again.append(first.whole);
    Frame copy{};
    REQUIRE(again.next(copy) == Result::kFrame);
    CHECK(body_of(copy) == body_of(first));

    Frame second{};
    REQUIRE(reader.next(second) == Result::kFrame);
    CHECK(whole_of(second) == b);
    CHECK(second.whole.data() == first.whole.data() + first.whole.size());
}
