// Tests for proto/message_parts.h: messages larger than a datagram cut into
// parts and put back together, and every way parts can be out of place.
#include "proto/message_parts.h"

#include <catch2/catch.hpp>

#include "proto/frame.h"
#include "wire/backbone.pb.h"

using namespace mdcast::proto;

namespace {

std::string sample_message(size_t bytes) {
    std::string frame(bytes, '\0');
    for (size_t i = 0; i < bytes; ++i) frame[i] = static_cast<char>(i * 7 + 3);
    return frame;
}

std::span<const uint8_t> bytes_of(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// The body of a MessagePart frame made by split_message.
std::span<const uint8_t> body_of(const std::string& part) {
    return bytes_of(part).subspan(kFrameHeaderBytes);
}

std::string part_body(uint32_t total, uint32_t offset, const std::string& data) {
    mdcast::wire::v1::MessagePart part;
    part.set_total_bytes(total);
    part.set_offset(offset);
    part.set_data(data);
    return part.SerializeAsString();
}

}  // namespace

TEST_CASE("a message split into parts is put back together byte for byte") {
    const std::string message = sample_message(10'000);
    const auto parts = split_message(bytes_of(message), 1'372);
    REQUIRE(parts.size() == 8);
    MessageAssembler assembler(1 << 20);
    std::string why;
    for (size_t i = 0; i < parts.size(); ++i) {
        CHECK(parts[i].size() <= 1'372);
        CHECK(decode_frame_header(reinterpret_cast<const uint8_t*>(parts[i].data())).type ==
              static_cast<uint16_t>(FrameType::kMessagePart));
        const auto result = assembler.add(body_of(parts[i]), why);
        CHECK(result == (i + 1 < parts.size() ? MessageAssembler::Result::kPending
                                              : MessageAssembler::Result::kComplete));
    }
    CHECK(std::string(reinterpret_cast<const char*>(assembler.whole().data()),
                      assembler.whole().size()) == message);
    CHECK_FALSE(assembler.in_progress());
}

TEST_CASE("every part fits the largest part frame, whatever the sizes") {
    for (size_t max : {64, 100, 1'400, 9'000}) {
        for (size_t size : {1, 31, 1'399, 1'400, 1'401, 65'536}) {
            const auto parts = split_message(bytes_of(sample_message(size)), max);
            size_t carried = 0;
            for (const auto& part : parts) {
                REQUIRE(part.size() <= max);
                mdcast::wire::v1::MessagePart decoded;
                REQUIRE(decoded.ParseFromArray(body_of(part).data(),
                                               static_cast<int>(body_of(part).size())));
                CHECK(decoded.offset() == carried);
                carried += decoded.data().size();
            }
            CHECK(carried == size);
        }
    }
}

TEST_CASE("a message over the limit is refused at its first part, naming the limit") {
    const auto parts = split_message(bytes_of(sample_message(5'000)), 1'400);
    MessageAssembler assembler(4'096);
    std::string why;
    CHECK(assembler.add(body_of(parts[0]), why) == MessageAssembler::Result::kRefused);
    CHECK(why == "message of 5000 bytes is over the limit of 4096");
    // The rest of it is out of place: refused one by one, nothing held.
    CHECK(assembler.add(body_of(parts[1]), why) == MessageAssembler::Result::kRefused);
    CHECK_FALSE(assembler.in_progress());
}

TEST_CASE("parts out of place abandon the message in progress") {
    const std::string message = sample_message(3'000);
    const auto parts = split_message(bytes_of(message), 1'400);
    REQUIRE(parts.size() == 3);
    std::string why;

    SECTION("a part skipped") {
        MessageAssembler assembler(1 << 20);
        CHECK(assembler.add(body_of(parts[0]), why) == MessageAssembler::Result::kPending);
        CHECK(assembler.add(body_of(parts[2]), why) == MessageAssembler::Result::kRefused);
        CHECK(why == "message part out of place");
        CHECK_FALSE(assembler.in_progress());
    }
    SECTION("a part without a beginning") {
        MessageAssembler assembler(1 << 20);
        CHECK(assembler.add(body_of(parts[1]), why) == MessageAssembler::Result::kRefused);
    }
    SECTION("a new message before the last one was whole") {
        MessageAssembler assembler(1 << 20);
        CHECK(assembler.add(body_of(parts[0]), why) == MessageAssembler::Result::kPending);
        CHECK(assembler.add(body_of(parts[0]), why) == MessageAssembler::Result::kRefused);
        CHECK(why == "a new message began before the last one was whole");
    }
    SECTION("another message in between: the caller abandons") {
        MessageAssembler assembler(1 << 20);
        CHECK(assembler.add(body_of(parts[0]), why) == MessageAssembler::Result::kPending);
        CHECK(assembler.abandon());
        CHECK_FALSE(assembler.abandon());
        CHECK(assembler.add(body_of(parts[1]), why) == MessageAssembler::Result::kRefused);
    }
    SECTION("a size that changes between parts") {
        MessageAssembler assembler(1 << 20);
        CHECK(assembler.add(bytes_of(part_body(3'000, 0, std::string(1'000, 'a'))), why) ==
              MessageAssembler::Result::kPending);
        CHECK(assembler.add(bytes_of(part_body(4'000, 1'000, std::string(1'000, 'a'))), why) ==
              MessageAssembler::Result::kRefused);
    }
    SECTION("parts longer than the message") {
        MessageAssembler assembler(1 << 20);
        CHECK(assembler.add(bytes_of(part_body(1'500, 0, std::string(1'000, 'a'))), why) ==
              MessageAssembler::Result::kPending);
        CHECK(assembler.add(bytes_of(part_body(1'500, 1'000, std::string(1'000, 'a'))), why) ==
              MessageAssembler::Result::kRefused);
        CHECK(why == "message parts longer than the message");
    }
    SECTION("malformed or empty parts") {
        MessageAssembler assembler(1 << 20);
        const std::string garbage = "\xff\xff\xff";
        CHECK(assembler.add(bytes_of(garbage), why) == MessageAssembler::Result::kRefused);
        CHECK(why == "malformed message part");
        CHECK(assembler.add(bytes_of(part_body(10, 0, "")), why) ==
              MessageAssembler::Result::kRefused);
    }
}
