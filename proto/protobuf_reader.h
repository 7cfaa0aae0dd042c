// Reading protobuf wire bytes by hand, for the hot paths that cannot afford the
// generated classes (proto/update_codec, the test client's update header). It
// accepts exactly what libprotobuf 3.21's parser accepts
// (google/protobuf/parse_context.h), so a hand-written decoder built on it never
// takes bytes a client's protobuf refuses, nor refuses bytes protobuf takes:
// tags are at most 5 bytes (bits above 32 dropped), lengths at most 5 bytes and
// below 2^31, other varints at most 10 bytes; unknown groups are skipped with
// their nesting counted against protobuf's budget. Checked against protobuf by
// the differential fuzz targets (tests/fuzz/update_decoder_fuzz.cpp).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>

namespace mdcast::proto {

// A varint as libprotobuf reads one (at most 10 bytes), ending by `end`.
// Unrolled when ten bytes are readable before `limit` (>= `end`: a caller that
// knows the enclosing buffer lets a value's last varint qualify too); bytes
// past `end` are then read but never taken.
[[gnu::always_inline]] inline bool read_varint(const uint8_t*& p, const uint8_t* end,
                                               const uint8_t* limit, uint64_t& value) {
    if (p < end && *p < 0x80) {  // tags, field ids and small values: one byte
        value = *p++;
        return true;
    }
    if (limit - p >= 10) {
        uint64_t v = 0;
#pragma GCC unroll 10  // straight-line code: the compilers leave this loop rolled
        for (int i = 0; i < 10; ++i) {
            const uint8_t byte = p[i];
            v |= uint64_t{byte & 0x7Fu} << (7 * i);
            if (byte < 0x80) {
                if (i >= end - p) return false;  // runs past the end
                p += i + 1;
                value = v;
                return true;
            }
        }
        return false;  // longer than 10 bytes
    }
    value = 0;
    for (int shift = 0; shift < 64 && p < end; shift += 7) {
        const uint8_t byte = *p++;
        value |= uint64_t{byte & 0x7Fu} << shift;
        if ((byte & 0x80) == 0) return true;
    }
    return false;  // truncated or longer than 10 bytes
}

// Bounds-checked; every read returns false instead of passing the end.
class ProtobufReader {
  public:
    enum WireType : uint32_t {
        kVarint = 0,
        kFixed64 = 1,
        kLengthDelimited = 2,
        kStartGroup = 3,
        kEndGroup = 4,
        kFixed32 = 5
    };
    // libprotobuf's nesting budget (CodedInputStream's default recursion limit):
    // every sub-message and every group spends one level.
    static constexpr int kRecursionLimit = 100;

    explicit ProtobufReader(std::span<const uint8_t> bytes, int depth = kRecursionLimit)
        : p_(bytes.data()), end_(bytes.data() + bytes.size()), depth_(depth) {}
    bool done() const { return p_ == end_; }
    const uint8_t* position() const { return p_; }
    int depth() const { return depth_; }

    bool varint(uint64_t& value) { return read_varint(p_, end_, end_, value); }
    // uint32 and sint32 fields: a full varint whose high bits are dropped.
    bool varint32(uint32_t& value) {
        uint64_t wide = 0;
        if (!varint(wide)) return false;
        value = static_cast<uint32_t>(wide);
        return true;
    }
    bool fixed64(uint64_t& value) {
        if (end_ - p_ < 8) return false;
        std::memcpy(&value, p_, 8);  // little-endian on the wire; x86/ARM64 hosts are too
        p_ += 8;
        return true;
    }
    bool bytes(std::span<const uint8_t>& out) {
        uint32_t length = 0;
        if (!short_varint(length, kMaxLengthLastByte) || length > static_cast<uint64_t>(end_ - p_))
            return false;
        out = {p_, static_cast<size_t>(length)};
        p_ += length;
        return true;
    }
    // A length-delimited sub-message, read with one level less of budget.
    bool message(std::span<const uint8_t>& out) { return depth_ > 0 && bytes(out); }
    bool skip(uint32_t field, uint32_t wire_type) {
        uint64_t ignored = 0;
        std::span<const uint8_t> ignored_bytes;
        switch (wire_type) {
            case kVarint:
                return varint(ignored);
            case kFixed64:
                return fixed64(ignored);
            case kLengthDelimited:
                return bytes(ignored_bytes);
            case kStartGroup:
                return skip_group(field);
            case kFixed32:
                if (end_ - p_ < 4) return false;
                p_ += 4;
                return true;
            default:
                return false;  // an end-group tag outside its group, or wire type 6/7
        }
    }
    bool tag(uint32_t& field, uint32_t& wire_type) {
        uint32_t key = 0;
        if (!short_varint(key, 0x7F)) return false;
        field = key >> 3;
        wire_type = key & 7;
        return field != 0;
    }

  private:
    static constexpr uint8_t kMaxLengthLastByte = 0x07;  // lengths stay below 2^31

    // At most 5 bytes; the 5th may be at most `max_last`. Bits past 32 are dropped.
    bool short_varint(uint32_t& value, uint8_t max_last) {
        if (p_ < end_ && *p_ < 0x80) {  // tags and lengths are one byte most of the time
            value = *p_++;
            return true;
        }
        return short_varint_slow(value, max_last);
    }
    [[gnu::noinline]] bool short_varint_slow(uint32_t& value, uint8_t max_last) {
        value = 0;
        for (int i = 0; i < 5 && p_ < end_; ++i) {
            const uint8_t byte = *p_++;
            if (i == 4 && byte > max_last) return false;
            value |= uint32_t{byte & 0x7Fu} << (7 * i);
            if ((byte & 0x80) == 0) return true;
        }
        return false;
    }
    // Fields up to the end-group tag with the same field number.
    bool skip_group(uint32_t group_field) {
        if (--depth_ < 0) return false;
        for (;;) {
            uint32_t field, wire_type;
            if (!tag(field, wire_type)) return false;
            if (wire_type == kEndGroup) {
                ++depth_;
                return field == group_field;
            }
            if (!skip(field, wire_type)) return false;
        }
    }

    const uint8_t* p_;
    const uint8_t* end_;
    int depth_;
};

}  // namespace mdcast::proto
