#include "update_payload.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "proto/frame.h"
#include "tools/sample_items.h"

namespace mdcast::tools {

namespace {

// The sizing helpers are forced inline: layout() runs them for every update
// of the SDK bench publisher, where out-of-line calls were most of its cost.

// Protobuf wire tags (field number << 3 | wire type) of the messages written here.
constexpr uint8_t kUpdateItemId = 0x08, kUpdateItemSeq = 0x10, kUpdateStamp = 0x19,
                  kUpdateFields = 0x22;
constexpr uint8_t kListEntry = 0x0a;
constexpr uint8_t kValueId = 0x08, kValueInt = 0x10, kValueDecimal = 0x1a, kValueString = 0x2a;
constexpr uint8_t kDecimalMantissa = 0x08, kDecimalExponent = 0x10;

[[gnu::always_inline]] inline size_t varint_size(uint64_t v) {
    return v < 0x80 ? 1 : (static_cast<size_t>(std::bit_width(v)) + 6) / 7;
}

[[gnu::always_inline]] inline uint64_t zigzag64(int64_t v) {
    return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
[[gnu::always_inline]] inline uint32_t zigzag32(int32_t v) {
    return (static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31);
}

uint8_t* put_varint(uint8_t* p, uint64_t v) {
    for (; v >= 0x80; v >>= 7) *p++ = static_cast<uint8_t>(v | 0x80);
    *p++ = static_cast<uint8_t>(v);
    return p;
}

// proto3: a scalar outside a oneof is written only when it is not zero.
[[gnu::always_inline]] inline size_t optional_varint_size(uint64_t v) {
    return v ? 1 + varint_size(v) : 0;
}
uint8_t* put_optional_varint(uint8_t* p, uint8_t tag, uint64_t v) {
    if (!v) return p;
    *p++ = tag;
    return put_varint(p, v);
}

[[gnu::always_inline]] inline size_t decimal_size(const SampleValue& v) {
    return optional_varint_size(zigzag64(v.value)) + optional_varint_size(zigzag32(v.exponent));
}

// The FieldValue body; oneof members are written even when zero.
[[gnu::always_inline]] inline size_t value_size(const SampleValue& v) {
    const size_t id = optional_varint_size(v.id);
    if (!v.decimal) return id + 1 + varint_size(zigzag64(v.value));
    const size_t decimal = decimal_size(v);
    return id + 1 + varint_size(decimal) + decimal;
}

[[gnu::always_inline]] inline size_t filler_size(size_t length) {
    return 1 + varint_size(kFillerFieldId) + 1 + varint_size(length) + length;
}

[[gnu::always_inline]] inline size_t entry_size(size_t body) {
    return 1 + varint_size(body) + body;
}

uint8_t* put_value(uint8_t* p, const SampleValue& v) {
    *p++ = kListEntry;
    p = put_varint(p, value_size(v));
    p = put_optional_varint(p, kValueId, v.id);
    if (!v.decimal) {
        *p++ = kValueInt;
        return put_varint(p, zigzag64(v.value));
    }
    *p++ = kValueDecimal;
    p = put_varint(p, decimal_size(v));
    p = put_optional_varint(p, kDecimalMantissa, zigzag64(v.value));
    return put_optional_varint(p, kDecimalExponent, zigzag32(v.exponent));
}

// Longest filler string with the whole body at most `room` bytes, given the body
// without the field list (`head`) and the sample entries (`list`). -1: none fits.
long filler_length(size_t room, size_t head, size_t list) {
    const auto body = [&](size_t length) {
        const size_t fields = list + entry_size(filler_size(length));
        return head + 1 + varint_size(fields) + fields;
    };
    if (body(0) > room) return -1;
    size_t length = room - body(0);
    while (length > 0 && body(length) > room) --length;  // at most a few steps: varint lengths
    return static_cast<long>(length);
}

}  // namespace

UpdateEncoder::UpdateEncoder(size_t body_bytes) : body_bytes_(body_bytes) {
    frame_.resize(proto::kFrameHeaderBytes + std::max<size_t>(body_bytes, 256));
}

UpdateEncoder::Layout UpdateEncoder::layout(uint64_t item_id, uint64_t index, uint64_t seq,
                                            uint64_t publish_time_ns) {
    return layout(item_id, update_values(index, seq), seq, publish_time_ns);
}

UpdateEncoder::Layout UpdateEncoder::layout(uint64_t item_id, std::span<const SampleValue> values,
                                            uint64_t seq, uint64_t publish_time_ns) {
    size_t used = values.size();
    const size_t head =
        optional_varint_size(item_id) + optional_varint_size(seq) + (publish_time_ns ? 9 : 0);
    size_t list = 0;
    for (const SampleValue& v : values) list += entry_size(value_size(v));
    const size_t natural = head + 1 + varint_size(list) + list;
    long filler = -1;
    if (body_bytes_ > natural) {
        // Make room for the filler by leaving out trailing sample fields when needed.
        while ((filler = filler_length(body_bytes_, head, list)) < 0 && used > 1) {
            list -= entry_size(value_size(values[--used]));
        }
    } else if (body_bytes_ > 0 && body_bytes_ < natural) {
        ++undersized_;
    }
    const size_t fields =
        list + (filler >= 0 ? entry_size(filler_size(static_cast<size_t>(filler))) : 0);
    const size_t body = head + 1 + varint_size(fields) + fields;
    if (body_bytes_ > natural && body != body_bytes_) ++inexact_;
    return Layout{used, filler, body};
}

std::span<const uint8_t> UpdateEncoder::encode(uint64_t item_id, uint64_t index, uint64_t seq,
                                               uint64_t publish_time_ns) {
    const auto values = update_values(index, seq);
    const Layout plan = layout(item_id, values, seq, publish_time_ns);
    const size_t used = plan.sample_fields;
    const long filler = plan.filler;
    const size_t body = plan.body;
    size_t fields = 0;
    for (size_t i = 0; i < used; ++i) fields += entry_size(value_size(values[i]));
    if (filler >= 0) fields += entry_size(filler_size(static_cast<size_t>(filler)));
    if (frame_.size() < proto::kFrameHeaderBytes + body)
        frame_.resize(proto::kFrameHeaderBytes + body);

    uint8_t* const start = frame_.data();
    proto::encode_frame_header(
        {static_cast<uint32_t>(body), static_cast<uint16_t>(proto::FrameType::kUpdate), 0}, start);
    uint8_t* p = start + proto::kFrameHeaderBytes;
    p = put_optional_varint(p, kUpdateItemId, item_id);
    p = put_optional_varint(p, kUpdateItemSeq, seq);
    if (publish_time_ns) {
        *p++ = kUpdateStamp;
        for (int i = 0; i < 8; ++i) *p++ = static_cast<uint8_t>(publish_time_ns >> (8 * i));
    }
    *p++ = kUpdateFields;
    p = put_varint(p, fields);
    for (size_t i = 0; i < used; ++i) p = put_value(p, values[i]);
    if (filler >= 0) {
        const auto length = static_cast<size_t>(filler);
        *p++ = kListEntry;
        p = put_varint(p, filler_size(length));
        *p++ = kValueId;
        p = put_varint(p, kFillerFieldId);
        *p++ = kValueString;
        p = put_varint(p, length);
        std::memset(p, 'x', length);
        p += length;
    }
    return {start, static_cast<size_t>(p - start)};
}

std::span<const uint8_t> UpdateEncoder::mark_trade(std::span<const uint8_t> frame) {
    const size_t size = frame.size();  // frame is frame_'s start: encode()'s result
    if (frame_.size() < size + 2) frame_.resize(size + 2);
    frame_[size] = 0x30;  // Update.trade, field 6, varint
    frame_[size + 1] = 0x01;
    const auto body = static_cast<uint32_t>(size + 2 - proto::kFrameHeaderBytes);
    proto::encode_frame_header({body, static_cast<uint16_t>(proto::FrameType::kUpdate), 0},
                               frame_.data());
    return {frame_.data(), size + 2};
}

}  // namespace mdcast::tools
