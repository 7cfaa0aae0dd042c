// Tests for tools/source/update_payload.h: updates padded to an exact body size
// that still decode to the sample values.
#include "update_payload.h"

#include <catch2/catch.hpp>

#include "proto/frame.h"
#include "tools/sample_items.h"
#include "wire/common.pb.h"

namespace {

using mdcast::tools::kFillerFieldId;
using mdcast::tools::UpdateEncoder;
namespace wire = mdcast::wire::v1;

wire::Update decode(std::span<const uint8_t> frame) {
    REQUIRE(frame.size() >= mdcast::proto::kFrameHeaderBytes);
    const auto header = mdcast::proto::decode_frame_header(frame.data());
    REQUIRE(header.type == static_cast<uint16_t>(mdcast::proto::FrameType::kUpdate));
    REQUIRE(header.body_bytes + mdcast::proto::kFrameHeaderBytes == frame.size());
    wire::Update update;
    REQUIRE(update.ParseFromArray(frame.data() + 8, static_cast<int>(header.body_bytes)));
    return update;
}

}  // namespace

TEST_CASE("natural size: the sample fields only", "[update_payload]") {
    UpdateEncoder encoder(0);
    const auto update = decode(encoder.encode(7, 3, 12, 1'795'000'000'000'000'000));
    CHECK(update.item_id() == 7);
    CHECK(update.item_seq() == 12);
    CHECK(update.publish_time_ns() == 1'795'000'000'000'000'000u);
    REQUIRE(update.fields().fields_size() == 5);
    CHECK(update.fields().fields(0).decimal_value().mantissa() == 10000 + 300 + 12);
}

TEST_CASE("the bytes are exactly what protobuf writes for the same update", "[update_payload]") {
    for (size_t target : {0u, 74u, 300u}) {
        UpdateEncoder encoder(target);
        for (uint64_t seq : {0ull, 1ull, 200ull, 5'000'000ull}) {
            for (uint64_t stamp : {0ull, 1'795'000'000'000'000'000ull}) {
                const auto frame = encoder.encode(4242, 17, seq, stamp);
                // Protobuf's own encoding of what the frame decodes to.
                const wire::Update decoded = decode(frame);
                wire::Update expected;
                expected.set_item_id(4242);
                expected.set_item_seq(seq);
                expected.set_publish_time_ns(stamp);
                mdcast::tools::fill_update_fields(*expected.mutable_fields(), 17, seq);
                const int sample_fields = decoded.fields().fields_size() - (target ? 1 : 0);
                while (expected.fields().fields_size() > sample_fields) {
                    expected.mutable_fields()->mutable_fields()->RemoveLast();
                }
                if (target)
                    *expected.mutable_fields()->add_fields() =
                        decoded.fields().fields(sample_fields);
                const std::string bytes = expected.SerializeAsString();
                INFO("target " << target << " seq " << seq << " stamp " << stamp);
                REQUIRE(std::string(frame.begin() + 8, frame.end()) == bytes);
            }
        }
    }
}

TEST_CASE("every body is exactly the asked size across ids, sequences and stamps",
          "[update_payload]") {
    for (size_t target : {74u, 128u, 256u, 512u, 1024u}) {
        UpdateEncoder encoder(target);
        for (uint64_t seq : {1ull, 127ull, 128ull, 20'000ull, 3'000'000ull}) {
            for (uint64_t id : {1ull, 999ull, 70'000ull}) {
                for (uint64_t stamp : {0ull, 1'795'000'000'000'000'000ull}) {
                    const auto frame = encoder.encode(id, id % 1000, seq, stamp);
                    INFO("target " << target << " id " << id << " seq " << seq << " stamp "
                                   << stamp);
                    REQUIRE(frame.size() - 8 == target);
                    const auto update = decode(frame);
                    CHECK(update.item_seq() == seq);
                    const auto& last = update.fields().fields(update.fields().fields_size() - 1);
                    CHECK(last.id() == kFillerFieldId);
                }
            }
        }
        CHECK(encoder.inexact() == 0);
        CHECK(encoder.undersized_target() == 0);
    }
}

TEST_CASE("layout() names the fields encode() writes", "[update_payload]") {
    for (size_t target : {0u, 40u, 74u, 256u}) {
        UpdateEncoder encoder(target);
        for (uint64_t seq : {1ull, 200ull, 3'000'000ull}) {
            const uint64_t stamp = 1'795'000'000'000'000'000ull;
            const auto layout = encoder.layout(7, 6, seq, stamp);
            const auto update = decode(encoder.encode(7, 6, seq, stamp));
            INFO("target " << target << " seq " << seq);
            const auto& fields = update.fields().fields();
            CHECK(layout.body == static_cast<size_t>(update.ByteSizeLong()));
            CHECK(static_cast<size_t>(fields.size()) ==
                  layout.sample_fields + (layout.filler >= 0 ? 1 : 0));
            if (layout.filler >= 0) {
                CHECK(fields.rbegin()->string_value().size() == static_cast<size_t>(layout.filler));
            }
        }
    }
}

TEST_CASE("a size below the natural size is not met and is counted", "[update_payload]") {
    UpdateEncoder encoder(20);
    const auto frame = encoder.encode(1, 1, 1, 1'795'000'000'000'000'000);
    CHECK(frame.size() - 8 > 20);
    CHECK(decode(frame).fields().fields_size() == 5);
    CHECK(encoder.undersized_target() == 1);
}
