// Encodes the updates mdcast-source publishes, at a chosen size.
//
// An update carries the sample fields (tools/sample_items.h: BID, ASK, BIDSIZE,
// ASKSIZE, ACVOL_1) and, when a body size is asked for (--update-bytes, the
// seed's "74-byte RWF messages"), one filler STRING field, application field id
// kFillerFieldId, whose length is chosen per update so the protobuf body of the
// Update frame (after the 8-byte frame header) is exactly that many bytes. The
// filler is needed because the other parts are varints whose length changes
// with the item id, the sequence number and the values. When the room left is
// too small for a filler (8 bytes at least), the last sample field is left out
// of that update and the filler takes its place. A size below the natural size
// of an update cannot be met: such updates go out unpadded and are counted.
//
// Why not wire::v1::Update::SerializeToArray: a load generator must cost far
// less than what it loads. Building the protobuf message allocates its
// sub-messages and strings per update and sizing the filler needs several
// ByteSizeLong passes; writing the few fixed fields directly costs a fraction.
// The bytes are exactly what protobuf writes for the same message (a unit test
// compares them), and every update parses as a wire::v1::Update.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace mdcast::tools {

struct SampleValue;

constexpr uint32_t kFillerFieldId = 32768;  // first application field id (etc/fields.dict)

class UpdateEncoder {
  public:
    // `body_bytes` 0: no filler (the natural size).
    explicit UpdateEncoder(size_t body_bytes);

    // The whole frame (header + body) for item `index` (its id on the wire
    // `item_id`) at sequence `seq`, stamped with `publish_time_ns` (0: unstamped).
    // Valid until the next call.
    std::span<const uint8_t> encode(uint64_t item_id, uint64_t index, uint64_t seq,
                                    uint64_t publish_time_ns);

    // What encode() puts in the field list for the same arguments: the first
    // `sample_fields` of update_values(index, seq), then a filler string of
    // `filler` bytes (-1: none). For publishers that build the update through
    // an API (the SDK's FieldList) rather than as bytes.
    struct Layout {
        size_t sample_fields = 0;
        long filler = -1;
        size_t body = 0;  // the Update body's size
    };
    // The frame encode() just returned, marked a trade (Update.trade = true,
    // two bytes more than --update-bytes asked for).
    std::span<const uint8_t> mark_trade(std::span<const uint8_t> frame);
    Layout layout(uint64_t item_id, uint64_t index, uint64_t seq, uint64_t publish_time_ns);
    // The same for `values` = update_values(index, seq), already at hand.
    Layout layout(uint64_t item_id, std::span<const SampleValue> values, uint64_t seq,
                  uint64_t publish_time_ns);

    size_t body_bytes() const { return body_bytes_; }
    uint64_t undersized_target() const { return undersized_; }  // natural size above the target
    uint64_t inexact() const { return inexact_; }               // padded, but not to the exact size

  private:
    size_t body_bytes_;
    std::vector<uint8_t> frame_;
    uint64_t undersized_ = 0;
    uint64_t inexact_ = 0;
};

}  // namespace mdcast::tools
