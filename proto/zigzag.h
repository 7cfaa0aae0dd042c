// Protobuf's zigzag encoding of signed integers (sint32, sint64), shared by the
// hand-written codecs (update_codec, update_encode, book_codec).
#pragma once

#include <cstdint>

namespace mdcast::proto {

inline uint64_t zigzag(int64_t v) {
    return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t unzigzag(uint64_t v) {
    return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
}
inline int32_t unzigzag32(uint32_t v) {
    return static_cast<int32_t>((v >> 1) ^ (~(v & 1) + 1));
}

}  // namespace mdcast::proto
