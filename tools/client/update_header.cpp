#include "update_header.h"

namespace mdcast::tools {

namespace {

enum WireType : uint8_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// Reads a varint of at most 10 bytes; false past the end or when too long.
bool read_varint(const uint8_t*& p, const uint8_t* end, uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 70 && p < end; shift += 7) {
        const uint8_t byte = *p++;
        value |= static_cast<uint64_t>(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) return true;
    }
    return false;
}

bool read_fixed64(const uint8_t*& p, const uint8_t* end, uint64_t& value) {
    if (end - p < 8) return false;
    value = 0;
    for (int i = 7; i >= 0; --i) value = (value << 8) | p[i];  // little-endian on the wire
    p += 8;
    return true;
}

// Skips one value of `type`; false when it runs past the end or the type is unknown.
bool skip_value(const uint8_t*& p, const uint8_t* end, uint8_t type) {
    uint64_t ignored = 0;
    switch (type) {
        case kVarint:
            return read_varint(p, end, ignored);
        case kFixed64:
            return read_fixed64(p, end, ignored);
        case kFixed32:
            if (end - p < 4) return false;
            p += 4;
            return true;
        case kLengthDelimited:
            if (!read_varint(p, end, ignored) || ignored > static_cast<uint64_t>(end - p))
                return false;
            p += ignored;
            return true;
        default:
            return false;  // groups (3, 4) and reserved types are not valid here
    }
}

}  // namespace

bool decode_update_header(std::span<const uint8_t> body, UpdateHeader& out) {
    out = UpdateHeader{};
    const uint8_t* p = body.data();
    const uint8_t* const end = p + body.size();
    while (p < end) {
        uint64_t tag = 0;
        if (!read_varint(p, end, tag) || (tag >> 3) == 0) return false;
        const uint64_t field = tag >> 3;
        const auto type = static_cast<uint8_t>(tag & 7);
        bool ok = false;
        if (field == 1 && type == kVarint) {
            ok = read_varint(p, end, out.item_id);
        } else if (field == 2 && type == kVarint) {
            ok = read_varint(p, end, out.item_seq);
        } else if (field == 3 && type == kFixed64) {
            ok = read_fixed64(p, end, out.publish_time_ns);
        } else if (field == 5 && type == kVarint) {
            uint64_t flag = 0;
            ok = read_varint(p, end, flag);
            out.conflated = flag != 0;
        } else {
            ok = skip_value(p, end, type);
        }
        if (!ok) return false;
    }
    return true;
}

}  // namespace mdcast::tools
