// Tests for proto/backbone_packet.h: the fixed datagram header, the packet
// builder and the message iterator that treats every datagram as hostile.
#include "proto/backbone_packet.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "proto/frame.h"
#include "wire/backbone.pb.h"
#include "wire/common.pb.h"

namespace {

using mdcast::proto::decode_packet_header;
using mdcast::proto::encode_frame_header;
using mdcast::proto::encode_frame_string;
using mdcast::proto::encode_packet_header;
using mdcast::proto::Frame;
using mdcast::proto::FrameHeader;
using mdcast::proto::FrameType;
using mdcast::proto::kBackboneControlTypes;
using mdcast::proto::kBackboneDataTypes;
using mdcast::proto::kFrameHeaderBytes;
using mdcast::proto::kMaxDatagramBytes;
using mdcast::proto::kPacketHeaderBytes;
using mdcast::proto::kPacketMagic;
using mdcast::proto::PacketBuilder;
using mdcast::proto::PacketError;
using mdcast::proto::PacketHeader;
using mdcast::proto::PacketMessageIterator;
using mdcast::proto::PacketType;
namespace wire = mdcast::wire::v1;

using IterResult = PacketMessageIterator::Result;

wire::Update make_update(uint64_t item, uint64_t seq) {
    wire::Update update;
    update.set_item_id(item);
    update.set_item_seq(seq);
    auto* f = update.mutable_fields()->add_fields();
    f->set_id(22);
    f->mutable_decimal_value()->set_mantissa(10125);
    f->mutable_decimal_value()->set_exponent(-2);
    return update;
}

// A datagram with a valid header for `payload`, built by hand (not by PacketBuilder).
std::vector<uint8_t> datagram_with(const std::string& payload, uint16_t count,
                                   PacketType type = PacketType::kData) {
    std::vector<uint8_t> out(kPacketHeaderBytes + payload.size());
    PacketHeader header;
    header.type = type;
    header.epoch = 0x1122334455667788ull;
    header.sequence = 5;
    header.message_count = count;
    header.payload_bytes = static_cast<uint32_t>(payload.size());
    encode_packet_header(header, out.data());
    std::memcpy(out.data() + kPacketHeaderBytes, payload.data(), payload.size());
    return out;
}

std::string raw_frame_header(uint32_t body, uint16_t type, uint16_t flags) {
    std::string out(kFrameHeaderBytes, '\0');
    encode_frame_header(FrameHeader{body, type, flags}, reinterpret_cast<uint8_t*>(out.data()));
    return out;
}

// Iterates a datagram to the end; returns the frames or stops at the first error.
struct Walk {
    std::vector<Frame> frames;
    IterResult last;
};

Walk walk(std::span<const uint8_t> datagram, mdcast::proto::FrameTypeSet accepted) {
    PacketHeader header;
    REQUIRE(decode_packet_header(datagram, header) == PacketError::kNone);
    PacketMessageIterator it(datagram, header, accepted);
    Walk w{};
    Frame frame{};
    while ((w.last = it.next(frame)) == IterResult::kFrame) w.frames.push_back(frame);
    return w;
}

}  // namespace

TEST_CASE("packet header has the documented 32-byte layout", "[backbone_packet]") {
    PacketHeader header;
    header.type = PacketType::kHeartbeat;
    header.flags = 0;
    header.epoch = 0x0102030405060708ull;
    header.sequence = 0x1112131415161718ull;
    header.message_count = 0x2122;
    header.payload_bytes = 0x31323334;
    uint8_t out[kPacketHeaderBytes];
    std::memset(out, 0xEE, sizeof out);
    encode_packet_header(header, out);

    const uint8_t expected[kPacketHeaderBytes] = {
        'M',  'D',  'C',  'B',                           // magic
        1,                                               // version
        2,                                               // type: heartbeat
        0,    0,                                         // flags
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,  // epoch
        0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,  // sequence
        0x21, 0x22,                                      // message count
        0,    0,                                         // reserved
        0x31, 0x32, 0x33, 0x34,                          // payload bytes
    };
    CHECK(std::memcmp(out, expected, kPacketHeaderBytes) == 0);
    CHECK(kPacketMagic == 0x4D444342u);
    CHECK(kPacketHeaderBytes == 32);
}

TEST_CASE("packet header round trips", "[backbone_packet]") {
    const std::string payload(100, 'p');
    auto datagram = datagram_with(payload, 3, PacketType::kControl);
    PacketHeader back;
    REQUIRE(decode_packet_header(datagram, back) == PacketError::kNone);
    CHECK(back.type == PacketType::kControl);
    CHECK(back.flags == 0);
    CHECK(back.epoch == 0x1122334455667788ull);
    CHECK(back.sequence == 5);
    CHECK(back.message_count == 3);
    CHECK(back.payload_bytes == 100);

    PacketHeader big;
    big.epoch = UINT64_MAX;
    big.sequence = UINT64_MAX - 1;
    big.message_count = UINT16_MAX;
    big.payload_bytes = 0;
    std::vector<uint8_t> raw(kPacketHeaderBytes);
    encode_packet_header(big, raw.data());
    REQUIRE(decode_packet_header(raw, back) == PacketError::kNone);
    CHECK(back.epoch == UINT64_MAX);
    CHECK(back.sequence == UINT64_MAX - 1);
    CHECK(back.message_count == UINT16_MAX);
}

TEST_CASE("every packet error is detected", "[backbone_packet]") {
    auto good = datagram_with(encode_frame_string(FrameType::kUpdate, make_update(1, 1)), 1);
    PacketHeader out;
    REQUIRE(decode_packet_header(good, out) == PacketError::kNone);

    SECTION("too short") {
        for (size_t n : {size_t{0}, size_t{1}, size_t{31}}) {
            INFO("size " << n);
            CHECK(decode_packet_header(std::span<const uint8_t>(good.data(), n), out) ==
                  PacketError::kTooShort);
        }
        // Exactly a header with zero payload is fine.
        auto empty = datagram_with("", 0);
        CHECK(empty.size() == 32);
        CHECK(decode_packet_header(empty, out) == PacketError::kNone);
    }
    SECTION("bad magic") {
        for (size_t i = 0; i < 4; ++i) {
            auto bad = good;
            bad[i] ^= 0x20;
            CHECK(decode_packet_header(bad, out) == PacketError::kBadMagic);
        }
    }
    SECTION("bad version") {
        for (uint8_t v : {uint8_t{0}, uint8_t{2}, uint8_t{255}}) {
            auto bad = good;
            bad[4] = v;
            CHECK(decode_packet_header(bad, out) == PacketError::kBadVersion);
        }
    }
    SECTION("bad type") {
        for (uint8_t t : {uint8_t{0}, uint8_t{5}, uint8_t{255}}) {
            auto bad = good;
            bad[5] = t;
            CHECK(decode_packet_header(bad, out) == PacketError::kBadType);
        }
        for (uint8_t t : {uint8_t{1}, uint8_t{2}, uint8_t{3}, uint8_t{4}}) {
            auto ok = good;
            ok[5] = t;
            CHECK(decode_packet_header(ok, out) == PacketError::kNone);
        }
    }
    SECTION("retransmit flag") {
        auto repair = good;
        repair[5] = static_cast<uint8_t>(PacketType::kData);
        repair[7] = 1;
        CHECK(decode_packet_header(repair, out) == PacketError::kNone);
        CHECK(out.flags == mdcast::proto::kPacketFlagRetransmit);
        repair[5] = static_cast<uint8_t>(PacketType::kHeartbeat);
        CHECK(decode_packet_header(repair, out) ==
              PacketError::kBadFlags);  // only data is repaired
        std::vector<uint8_t> copy(good.begin(), good.end());
        mdcast::proto::set_packet_retransmit_flag(copy, true);
        CHECK(copy[7] == 1);
        mdcast::proto::set_packet_retransmit_flag(copy, false);
        CHECK(copy[7] == 0);
    }
    SECTION("signed flag needs room for the trailer") {
        auto signed_packet = good;
        signed_packet[7] = 2;  // claims a 16-byte signature the datagram does not have
        CHECK(decode_packet_header(signed_packet, out) == PacketError::kBadLength);
    }
    SECTION("padded flag: zeros after the packet, data packets only") {
        auto padded = good;
        padded[7] = 4;
        CHECK(decode_packet_header(padded, out) == PacketError::kNone);  // no padding yet
        padded.insert(padded.end(), 100, 0);
        REQUIRE(decode_packet_header(padded, out) == PacketError::kNone);
        CHECK(out.flags == mdcast::proto::kPacketFlagPadded);
        CHECK(mdcast::proto::packet_bytes(out) == good.size());
        CHECK(out.payload_bytes == good.size() - kPacketHeaderBytes);
        padded.back() = 1;  // a stray byte in the padding
        CHECK(decode_packet_header(padded, out) == PacketError::kBadPadding);
        padded.back() = 0;
        padded[good.size()] = 0x80;
        CHECK(decode_packet_header(padded, out) == PacketError::kBadPadding);
        padded[good.size()] = 0;
        padded[5] = static_cast<uint8_t>(PacketType::kHeartbeat);
        CHECK(decode_packet_header(padded, out) == PacketError::kBadFlags);
        // Without the flag, the same zeros are a length mismatch.
        auto unflagged = good;
        unflagged.insert(unflagged.end(), 100, 0);
        CHECK(decode_packet_header(unflagged, out) == PacketError::kBadLength);
        // Padded and signed: the trailer ends the packet, the zeros follow it.
        auto both = good;
        both[7] = 4 | 2;
        both.insert(both.end(), 16, 0xAB);  // the signature
        both.insert(both.end(), 30, 0);
        REQUIRE(decode_packet_header(both, out) == PacketError::kNone);
        CHECK(mdcast::proto::packet_bytes(out) == good.size() + 16);
    }
    SECTION("bad flags") {
        auto bad = good;
        bad[7] = 8;
        CHECK(decode_packet_header(bad, out) == PacketError::kBadFlags);
        bad = good;
        bad[6] = 0x80;
        CHECK(decode_packet_header(bad, out) == PacketError::kBadFlags);
    }
    SECTION("bad reserved") {
        auto bad = good;
        bad[26] = 1;
        CHECK(decode_packet_header(bad, out) == PacketError::kBadFlags);
        bad = good;
        bad[27] = 1;
        CHECK(decode_packet_header(bad, out) == PacketError::kBadFlags);
    }
    SECTION("payload length mismatch") {
        auto longer = good;
        longer.push_back(0);  // one stray byte after the declared payload
        CHECK(decode_packet_header(longer, out) == PacketError::kBadLength);
        auto shorter = good;
        shorter.pop_back();  // truncated datagram
        CHECK(decode_packet_header(shorter, out) == PacketError::kBadLength);
        auto huge = good;
        huge[28] = 0xFF;  // declares ~4 GiB
        CHECK(decode_packet_header(huge, out) == PacketError::kBadLength);
    }
}

TEST_CASE("packet error names", "[backbone_packet]") {
    using mdcast::proto::packet_error_name;
    CHECK(packet_error_name(PacketError::kNone) == "none");
    CHECK(packet_error_name(PacketError::kTooShort) == "too_short");
    CHECK(packet_error_name(PacketError::kBadMagic) == "bad_magic");
    CHECK(packet_error_name(PacketError::kBadVersion) == "bad_version");
    CHECK(packet_error_name(PacketError::kBadType) == "bad_type");
    CHECK(packet_error_name(PacketError::kBadFlags) == "bad_flags");
    CHECK(packet_error_name(PacketError::kBadLength) == "bad_length");
    CHECK(packet_error_name(PacketError::kBadMessage) == "bad_message");
}

TEST_CASE("builder packs messages and the iterator reads them back", "[backbone_packet]") {
    PacketBuilder builder(1400);
    CHECK(builder.empty());
    CHECK(builder.bytes() == kPacketHeaderBytes);
    CHECK(builder.max_bytes() == 1400);

    std::vector<std::string> sent;
    for (uint64_t i = 1; i <= 5; ++i) {
        const wire::Update update = make_update(100 + i, i);
        sent.push_back(encode_frame_string(FrameType::kUpdate, update));
        REQUIRE(builder.fits(sent.back().size()));
        builder.add(FrameType::kUpdate, update);
    }
    // add_frame forwards already framed bytes unchanged.
    wire::ItemStatus status;
    status.set_item_id(77);
    status.mutable_status()->set_stream_state(wire::STREAM_CLOSED);
    sent.push_back(encode_frame_string(FrameType::kItemStatus, status));
    const std::string& framed = sent.back();
    builder.add_frame({reinterpret_cast<const uint8_t*>(framed.data()), framed.size()});

    CHECK_FALSE(builder.empty());
    CHECK(builder.message_count() == 6);
    size_t total = kPacketHeaderBytes;
    for (const auto& s : sent) total += s.size();
    CHECK(builder.bytes() == total);

    const auto datagram = builder.finish(PacketType::kData, 0xABCDEF, 42);
    CHECK(datagram.size() == total);
    PacketHeader header;
    REQUIRE(decode_packet_header(datagram, header) == PacketError::kNone);
    CHECK(header.type == PacketType::kData);
    CHECK(header.epoch == 0xABCDEF);
    CHECK(header.sequence == 42);
    CHECK(header.message_count == 6);
    CHECK(header.payload_bytes == total - kPacketHeaderBytes);

    const Walk w = walk(datagram, kBackboneDataTypes);
    CHECK(w.last == IterResult::kEnd);
    REQUIRE(w.frames.size() == 6);
    for (size_t i = 0; i < 6; ++i) {
        CHECK(std::string(reinterpret_cast<const char*>(w.frames[i].whole.data()),
                          w.frames[i].whole.size()) == sent[i]);
    }
    CHECK(w.frames[5].type == FrameType::kItemStatus);
    wire::Update back;
    REQUIRE(
        back.ParseFromArray(w.frames[2].body.data(), static_cast<int>(w.frames[2].body.size())));
    CHECK(back.item_id() == 103);
    CHECK(back.item_seq() == 3);
}

TEST_CASE("builder reset starts a new packet", "[backbone_packet]") {
    PacketBuilder builder(512);
    builder.add(FrameType::kUpdate, make_update(1, 1));
    builder.add(FrameType::kUpdate, make_update(1, 2));
    (void)builder.finish(PacketType::kData, 1, 1);
    builder.reset();
    CHECK(builder.empty());
    CHECK(builder.message_count() == 0);
    CHECK(builder.bytes() == kPacketHeaderBytes);

    builder.add(FrameType::kUpdate, make_update(9, 9));
    const auto datagram = builder.finish(PacketType::kData, 1, 2);
    const Walk w = walk(datagram, kBackboneDataTypes);
    CHECK(w.last == IterResult::kEnd);
    REQUIRE(w.frames.size() == 1);
    wire::Update back;
    REQUIRE(
        back.ParseFromArray(w.frames[0].body.data(), static_cast<int>(w.frames[0].body.size())));
    CHECK(back.item_id() == 9);
}

TEST_CASE("empty heartbeat-style packet has no messages", "[backbone_packet]") {
    PacketBuilder builder(256);
    const auto datagram = builder.finish(PacketType::kHeartbeat, 3, 10);
    CHECK(datagram.size() == kPacketHeaderBytes);
    const Walk w = walk(datagram, kBackboneDataTypes);
    CHECK(w.frames.empty());
    CHECK(w.last == IterResult::kEnd);
}

TEST_CASE("builder respects the maximum datagram size", "[backbone_packet]") {
    const size_t max = 200;
    PacketBuilder builder(max);
    // Frames of exactly 24 bytes: header + 16-byte body.
    const std::string frame = [] {
        std::string f(kFrameHeaderBytes + 16, 'b');
        encode_frame_header(FrameHeader{16, static_cast<uint16_t>(FrameType::kUpdate), 0},
                            reinterpret_cast<uint8_t*>(f.data()));
        return f;
    }();
    const std::span<const uint8_t> bytes{reinterpret_cast<const uint8_t*>(frame.data()),
                                         frame.size()};
    size_t added = 0;
    while (builder.fits(frame.size())) {
        builder.add_frame(bytes);
        ++added;
        REQUIRE(builder.bytes() <= max);
    }
    // (200 - 32) / 24 = 7 frames fill 200 bytes exactly.
    CHECK(added == 7);
    CHECK(builder.bytes() == max);
    CHECK_FALSE(builder.fits(1));
    CHECK(builder.fits(0));
    CHECK(builder.finish(PacketType::kData, 1, 1).size() == max);

    builder.reset();
    CHECK(builder.fits(max - kPacketHeaderBytes));
    CHECK_FALSE(builder.fits(max - kPacketHeaderBytes + 1));
}

TEST_CASE("builder refuses a max datagram size out of range", "[backbone_packet]") {
    CHECK_THROWS_AS(PacketBuilder(kPacketHeaderBytes + kFrameHeaderBytes - 1),
                    std::invalid_argument);
    CHECK_THROWS_AS(PacketBuilder(kMaxDatagramBytes + 1), std::invalid_argument);
    CHECK_NOTHROW(PacketBuilder(kPacketHeaderBytes + kFrameHeaderBytes));
    PacketBuilder largest(kMaxDatagramBytes);
    CHECK(largest.max_bytes() == 65507);
    CHECK(largest.fits(kMaxDatagramBytes - kPacketHeaderBytes));
    CHECK_FALSE(largest.fits(kMaxDatagramBytes - kPacketHeaderBytes + 1));
}

TEST_CASE("iterator reports a count larger than the messages present", "[backbone_packet]") {
    const std::string payload = encode_frame_string(FrameType::kUpdate, make_update(1, 1)) +
                                encode_frame_string(FrameType::kUpdate, make_update(1, 2));
    const auto datagram = datagram_with(payload, 3);
    const Walk w = walk(datagram, kBackboneDataTypes);
    CHECK(w.frames.size() == 2);
    CHECK(w.last == IterResult::kError);
}

TEST_CASE("iterator reports a count smaller than the messages present", "[backbone_packet]") {
    const std::string payload = encode_frame_string(FrameType::kUpdate, make_update(1, 1)) +
                                encode_frame_string(FrameType::kUpdate, make_update(1, 2));
    const auto datagram = datagram_with(payload, 1);
    const Walk w = walk(datagram, kBackboneDataTypes);
    CHECK(w.frames.size() == 1);
    CHECK(w.last == IterResult::kError);

    const auto none = datagram_with(payload, 0);
    const Walk w0 = walk(none, kBackboneDataTypes);
    CHECK(w0.frames.empty());
    CHECK(w0.last == IterResult::kError);
}

TEST_CASE("iterator reports a truncated message", "[backbone_packet]") {
    const std::string full = encode_frame_string(FrameType::kUpdate, make_update(1, 1));
    SECTION("body cut short") {
        const auto datagram = datagram_with(full.substr(0, full.size() - 1), 1);
        const Walk w = walk(datagram, kBackboneDataTypes);
        CHECK(w.frames.empty());
        CHECK(w.last == IterResult::kError);
    }
    SECTION("header cut short") {
        const auto datagram = datagram_with(full + full.substr(0, 5), 2);
        const Walk w = walk(datagram, kBackboneDataTypes);
        CHECK(w.frames.size() == 1);
        CHECK(w.last == IterResult::kError);
    }
    SECTION("length field points past the datagram") {
        const auto datagram = datagram_with(
            raw_frame_header(0xFFFFFFF0u, static_cast<uint16_t>(FrameType::kUpdate), 0) + "abc", 1);
        const Walk w = walk(datagram, kBackboneDataTypes);
        CHECK(w.frames.empty());
        CHECK(w.last == IterResult::kError);
    }
}

TEST_CASE("iterator refuses a message type not accepted here", "[backbone_packet]") {
    wire::ImageRequest request;
    request.set_item_name("AAPL.O");
    const std::string control = encode_frame_string(FrameType::kImageRequest, request);
    SECTION("control message in a data packet") {
        const auto datagram =
            datagram_with(encode_frame_string(FrameType::kUpdate, make_update(1, 1)) + control, 2);
        const Walk w = walk(datagram, kBackboneDataTypes);
        CHECK(w.frames.size() == 1);
        CHECK(w.last == IterResult::kError);
    }
    SECTION("the same message is fine on the control set") {
        const auto datagram = datagram_with(control, 1, PacketType::kControl);
        const Walk w = walk(datagram, kBackboneControlTypes);
        REQUIRE(w.frames.size() == 1);
        CHECK(w.frames[0].type == FrameType::kImageRequest);
        CHECK(w.last == IterResult::kEnd);
    }
    SECTION("undefined type number") {
        const auto datagram = datagram_with(raw_frame_header(0, 63, 0), 1);
        CHECK(walk(datagram, kBackboneDataTypes).last == IterResult::kError);
    }
    SECTION("frame flags other than a book's map flag on a Refresh or Update") {
        const auto update = static_cast<uint16_t>(FrameType::kUpdate);
        CHECK(walk(datagram_with(raw_frame_header(0, update, 2), 1), kBackboneDataTypes).last ==
              IterResult::kError);
        const auto directory = static_cast<uint16_t>(FrameType::kDirectory);
        CHECK(walk(datagram_with(raw_frame_header(0, directory, mdcast::proto::kFrameFlagMap), 1),
                   kBackboneDataTypes)
                  .last == IterResult::kError);
        CHECK(walk(datagram_with(raw_frame_header(0, update, mdcast::proto::kFrameFlagMap), 1),
                   kBackboneDataTypes)
                  .last == IterResult::kEnd);
    }
}

TEST_CASE("iterator refuses trailing bytes after the last message", "[backbone_packet]") {
    const std::string frame = encode_frame_string(FrameType::kUpdate, make_update(1, 1));
    for (size_t extra = 1; extra <= kFrameHeaderBytes + 1; ++extra) {
        INFO("extra " << extra);
        const auto datagram = datagram_with(frame + std::string(extra, '\0'), 1);
        const Walk w = walk(datagram, kBackboneDataTypes);
        CHECK(w.frames.size() == 1);
        CHECK(w.last == IterResult::kError);
    }
}

TEST_CASE("iterator keeps returning end after the last message", "[backbone_packet]") {
    const auto datagram =
        datagram_with(encode_frame_string(FrameType::kUpdate, make_update(1, 1)), 1);
    PacketHeader header;
    REQUIRE(decode_packet_header(datagram, header) == PacketError::kNone);
    PacketMessageIterator it(datagram, header, kBackboneDataTypes);
    Frame frame{};
    CHECK(it.next(frame) == IterResult::kFrame);
    CHECK(it.next(frame) == IterResult::kEnd);
    CHECK(it.next(frame) == IterResult::kEnd);
}
