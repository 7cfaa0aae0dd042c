// The hot path's view of an Update: decoded straight from the protobuf wire
// bytes without allocating (field strings point into the frame), and encoded
// back for views and conflation. Everything else uses the generated protobuf
// classes; this exists because an update is decoded in the distributor and in
// every server at rates where protobuf's per-message allocations dominated the
// profile (docs/backbone.md, "Throughput").
//
// Wire compatible with wire.v1.Update in proto/wire/common.proto; unknown
// fields are skipped as protobuf would. Hostile input is refused, never read
// out of bounds.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mdcast::proto {

enum class FieldKind : uint8_t { kNone, kInt, kDecimal, kDouble, kString, kTime, kBlank };

struct FieldEntry {
    uint32_t id = 0;
    FieldKind kind = FieldKind::kNone;
    int32_t exponent = 0;   // kDecimal
    int64_t integer = 0;    // kInt, kTime, kDecimal mantissa
    double real = 0;        // kDouble
    std::string_view text;  // kString; points into the decoded bytes
};

struct UpdateView {
    uint64_t item_id = 0;
    uint64_t item_seq = 0;
    uint64_t publish_time_ns = 0;
    bool conflated = false;
    std::vector<FieldEntry> fields;  // reused between decodes: no allocation once warm
};

// Well-formed UTF-8 as protobuf requires of `string` fields (no overlong
// forms, no surrogates, nothing above U+10FFFF).
bool is_valid_utf8(std::string_view text);

// Decodes an Update body. False when the bytes are not a valid Update.
bool decode_update(std::span<const uint8_t> body, UpdateView& out);

// Appends a complete Update frame (frame header + body) to `out`. With `view`
// (sorted field ids) only those fields are written.
void append_update_frame(std::string& out, const UpdateView& update,
                         const std::vector<uint32_t>* view = nullptr);

}  // namespace mdcast::proto
