// The fields of an Update that the test client needs on every message: item
// id, item sequence, publish stamp and the conflated flag (wire/common.proto,
// Update 1-3 and 5).
//
// Why not Update::ParseFromArray: at millions of updates per second the field
// list dominates the cost of a full parse, and gap checks and latency need none
// of it. The field list is parsed only when updates are printed. The bytes are
// still treated as hostile: every tag, length and varint is bounds-checked and
// unknown fields are skipped as protobuf would; anything malformed is an error.
#pragma once

#include <cstdint>
#include <span>

namespace mdcast::tools {

struct UpdateHeader {
    uint64_t item_id = 0;
    uint64_t item_seq = 0;
    uint64_t publish_time_ns = 0;  // 0: not stamped
    bool conflated = false;        // several updates merged: the sequence jumps on purpose
};

// Decodes `body` (an encoded wire::v1::Update). Returns false when it is not
// well-formed protobuf; `out` is then unspecified. Fields that are absent keep
// their proto3 default of 0, and the last occurrence of a repeated scalar wins.
bool decode_update_header(std::span<const uint8_t> body, UpdateHeader& out);

}  // namespace mdcast::tools
