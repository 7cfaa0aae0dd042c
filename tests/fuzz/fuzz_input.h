// Splitting one libFuzzer input into the pieces a target needs (a selector byte,
// length-prefixed records), without reading past its end.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

namespace mdcast::fuzz {

class FuzzInput {
  public:
    FuzzInput(const uint8_t* data, size_t size) : rest_(data, size) {}

    bool empty() const { return rest_.empty(); }
    // The next byte, or 0 once the input is used up.
    uint8_t byte() {
        if (rest_.empty()) return 0;
        const uint8_t b = rest_[0];
        rest_ = rest_.subspan(1);
        return b;
    }
    // A record: a 2-byte little-endian length, then that many bytes (fewer at the end).
    std::span<const uint8_t> record() {
        const size_t length = byte() | (size_t{byte()} << 8);
        return take(length);
    }
    std::span<const uint8_t> take(size_t length) {
        const auto out = rest_.first(std::min(length, rest_.size()));
        rest_ = rest_.subspan(out.size());
        return out;
    }
    std::span<const uint8_t> rest() { return take(rest_.size()); }

  private:
    std::span<const uint8_t> rest_;
};

}  // namespace mdcast::fuzz
