// The writers of update_codec.h: Update frames encoded into memory sized
// beforehand, for the paths that build or re-encode updates (views, conflation,
// the publisher, the distributor's re-sequencing). The decoders are in
// update_codec.cpp.
#include <bit>
#include <cstring>

#include "proto/book_view.h"
#include "proto/frame.h"
#include "proto/protobuf_reader.h"
#include "proto/update_codec.h"
#include "proto/zigzag.h"

namespace mdcast::proto {

namespace {

size_t varint_size(uint64_t v) {
    return v < 128 ? 1 : (static_cast<size_t>(std::bit_width(v)) + 6) / 7;
}

// The writers below encode into memory sized beforehand: one resize per frame,
// no per-byte push_back. append_update_frame(UpdateView) sizes exactly with
// the *_size functions; append_update_rest makes room for the worst case and
// writes each length once what it covers is written (close_length).
inline uint8_t* put_varint(uint8_t* p, uint64_t v) {
    if (v < 0x80) [[likely]] {  // ids, tags, most lengths
        *p = static_cast<uint8_t>(v);
        return p + 1;
    }
    while (v >= 0x80) {
        *p++ = static_cast<uint8_t>((v & 0x7F) | 0x80);
        v >>= 7;
    }
    *p++ = static_cast<uint8_t>(v);
    return p;
}

uint8_t* put_fixed64(uint8_t* p, uint64_t v) {
    std::memcpy(p, &v, 8);
    return p + 8;
}

size_t decimal_size(const FieldEntry& f) {
    size_t n = 0;
    if (f.integer != 0) n += 1 + varint_size(zigzag(f.integer));
    if (f.exponent != 0) n += 1 + varint_size(zigzag(f.exponent));
    return n;
}

// Body size of one FieldValue.
size_t value_size(const FieldEntry& f) {
    size_t n = f.id != 0 ? 1 + varint_size(f.id) : 0;
    switch (f.kind) {
        case FieldKind::kInt:
            return n + 1 + varint_size(zigzag(f.integer));
        case FieldKind::kDecimal: {
            const size_t d = decimal_size(f);
            return n + 1 + varint_size(d) + d;
        }
        case FieldKind::kDouble:
        case FieldKind::kTime:
            return n + 9;
        case FieldKind::kString:
            return n + 1 + varint_size(f.text.size()) + f.text.size();
        case FieldKind::kBlank:
            return n + 2;
        case FieldKind::kNone:
            return n;
    }
    return n;
}

[[gnu::always_inline]] inline uint8_t* put_value(uint8_t* p, const FieldEntry& f) {
    if (f.id != 0) {
        *p++ = 0x08;
        p = put_varint(p, f.id);
    }
    switch (f.kind) {
        case FieldKind::kInt:
            *p++ = 0x10;
            return put_varint(p, zigzag(f.integer));
        case FieldKind::kDecimal: {
            // At most 1 + 10 + 1 + 5 bytes: its length is always one byte.
            *p++ = 0x1A;
            uint8_t* const length = p++;
            if (f.integer != 0) {
                *p++ = 0x08;
                p = put_varint(p, zigzag(f.integer));
            }
            if (f.exponent != 0) {
                *p++ = 0x10;
                p = put_varint(p, zigzag(f.exponent));
            }
            *length = static_cast<uint8_t>(p - length - 1);
            return p;
        }
        case FieldKind::kDouble:
            *p++ = 0x21;
            return put_fixed64(p, std::bit_cast<uint64_t>(f.real));
        case FieldKind::kString:
            *p++ = 0x2A;
            p = put_varint(p, f.text.size());
            if (!f.text.empty()) std::memcpy(p, f.text.data(), f.text.size());
            return p + f.text.size();
        case FieldKind::kTime:
            *p++ = 0x31;
            return put_fixed64(p, static_cast<uint64_t>(f.integer));
        case FieldKind::kBlank:
            *p++ = 0x3A;
            *p++ = 0x00;
            return p;
        case FieldKind::kNone:
            return p;
    }
    return p;
}

constexpr size_t kMaxVarintBytes = 10;
// The most bytes one field-list entry takes besides its string value: tag,
// length, id (1 + 5), and the largest value (a decimal: 1 + 1 + 17).
constexpr size_t kMaxEntryBytes = 1 + kMaxVarintBytes + 6 + 19;

// Moves a length-delimited run of 128 bytes or more (see close_length) up to
// make room for its length's varint, and writes it. Returns the run's new end.
[[gnu::noinline]] uint8_t* widen_length(uint8_t* length, size_t size) {
    const size_t extra = varint_size(size) - 1;
    std::memmove(length + 1 + extra, length + 1, size);
    put_varint(length, size);
    return length + 1 + extra + size;
}

// Finishes a length-delimited run written after a one-byte placeholder at
// `length` and ending at `end`: writes its length there, widening it (the
// caller made room for a full varint) when it needs more than one byte.
// Returns the run's end.
inline uint8_t* close_length(uint8_t* length, uint8_t* end) {
    const auto size = static_cast<size_t>(end - length - 1);
    if (size >= 0x80) [[unlikely]]
        return widen_length(length, size);
    *length = static_cast<uint8_t>(size);
    return end;
}

// Grows `out` by `bytes` and returns where they go.
uint8_t* grow(std::string& out, size_t bytes) {
    const size_t start = out.size();
    out.resize(start + bytes);
    return reinterpret_cast<uint8_t*>(out.data() + start);
}

uint8_t* put_frame_header(uint8_t* p, size_t body, uint16_t flags = 0) {
    encode_frame_header(
        FrameHeader{static_cast<uint32_t>(body), static_cast<uint16_t>(FrameType::kUpdate), flags},
        p);
    return p + kFrameHeaderBytes;
}

bool in_view(const FieldEntry& f, const std::vector<uint32_t>* view) {
    return view == nullptr || std::binary_search(view->begin(), view->end(), f.id);
}

// The bytes of trade, stands_for and first_publish_time_ns (omitted when unset).
size_t trade_tail_size(const UpdateView& update) {
    size_t size = update.trade ? 2 : 0;
    if (update.stands_for != 0) size += 1 + varint_size(update.stands_for);
    if (update.first_publish_time_ns != 0) size += 9;
    return size;
}

uint8_t* put_trade_tail(uint8_t* p, const UpdateView& update) {
    if (update.trade) {
        *p++ = 0x30;
        *p++ = 0x01;
    }
    if (update.stands_for != 0) {
        *p++ = 0x38;
        p = put_varint(p, update.stands_for);
    }
    if (update.first_publish_time_ns != 0) {
        *p++ = 0x41;
        p = put_fixed64(p, update.first_publish_time_ns);
    }
    return p;
}

}  // namespace

size_t field_values_bytes(std::span<const FieldEntry> fields) {
    size_t bytes = 0;
    for (const FieldEntry& f : fields) {
        const size_t value = value_size(f);
        bytes += 1 + varint_size(value) + value;
    }
    return bytes;
}

bool append_update_frame(std::string& out, const UpdateView& update,
                         const std::vector<uint32_t>* view) {
    size_t list_size = 0;
    for (const auto& f : update.fields) {
        if (in_view(f, view)) list_size += 1 + varint_size(value_size(f)) + value_size(f);
    }
    std::span<const uint8_t> map = update.map_bytes;
    if (view != nullptr && !map.empty()) {
        // A book's entries keep only the view's fields too. A Map that does not
        // parse goes as it came: the subscriber refuses it as every other does.
        thread_local std::string in_view_map;
        in_view_map.clear();
        if (append_map_in_view(in_view_map, map, *view)) {
            map = {reinterpret_cast<const uint8_t*>(in_view_map.data()), in_view_map.size()};
            if (map.empty() && list_size == 0) return false;  // nothing of it in view
        }
    }
    size_t body = 0;
    if (update.item_id != 0) body += 1 + varint_size(update.item_id);
    if (update.item_seq != 0) body += 1 + varint_size(update.item_seq);
    if (update.publish_time_ns != 0) body += 9;
    body += 1 + varint_size(list_size) + list_size;
    if (update.conflated) body += 2;
    body += trade_tail_size(update);
    const size_t map_size = map.size();
    if (map_size != 0) body += 1 + varint_size(map_size) + map_size;

    uint8_t* p = put_frame_header(grow(out, kFrameHeaderBytes + body), body,
                                  map_size != 0 ? kFrameFlagMap : 0);
    if (update.item_id != 0) {
        *p++ = 0x08;
        p = put_varint(p, update.item_id);
    }
    if (update.item_seq != 0) {
        *p++ = 0x10;
        p = put_varint(p, update.item_seq);
    }
    if (update.publish_time_ns != 0) {
        *p++ = 0x19;
        p = put_fixed64(p, update.publish_time_ns);
    }
    *p++ = 0x22;
    p = put_varint(p, list_size);
    for (const auto& f : update.fields) {
        if (!in_view(f, view)) continue;
        *p++ = 0x0A;
        p = put_varint(p, value_size(f));
        p = put_value(p, f);
    }
    if (update.conflated) {
        *p++ = 0x28;
        *p++ = 0x01;
    }
    p = put_trade_tail(p, update);
    if (map_size != 0) {
        *p++ = 0x4A;
        p = put_varint(p, map_size);
        std::memcpy(p, map.data(), map_size);
    }
    return true;
}

void append_update_rest(std::string& out, uint64_t publish_time_ns,
                        std::span<const FieldEntry> fields) {
    // One pass: each length is written as one byte ahead of what it covers
    // and widened afterwards in the rare case it is 128 or more (close_length),
    // so no value is sized before it is written. Room for the worst case is
    // made first and the unused tail cut off at the end.
    size_t bound = 9 + 1 + kMaxVarintBytes;
    for (const FieldEntry& f : fields) bound += kMaxEntryBytes + f.text.size();
    uint8_t* p = grow(out, bound);
    if (publish_time_ns != 0) {
        *p++ = 0x19;
        p = put_fixed64(p, publish_time_ns);
    }
    *p++ = 0x22;
    uint8_t* const list_length = p++;
    for (const FieldEntry& f : fields) {
        *p++ = 0x0A;
        uint8_t* const length = p++;
        p = close_length(length, put_value(p, f));
    }
    p = close_length(list_length, p);
    out.resize(static_cast<size_t>(p - reinterpret_cast<const uint8_t*>(out.data())));
}

void append_field_values(std::string& out, std::span<const FieldEntry> fields) {
    size_t bound = 0;
    for (const FieldEntry& f : fields) bound += kMaxEntryBytes + f.text.size();
    uint8_t* p = grow(out, bound);
    for (const FieldEntry& f : fields) {
        *p++ = 0x0A;
        uint8_t* const length = p++;
        p = close_length(length, put_value(p, f));
    }
    out.resize(static_cast<size_t>(p - reinterpret_cast<const uint8_t*>(out.data())));
}

void append_update_frame(std::string& out, uint64_t item_id, uint64_t item_seq,
                         std::span<const uint8_t> rest, uint16_t frame_flags) {
    const size_t body = 2 + varint_size(item_id) + varint_size(item_seq) + rest.size();
    uint8_t* p = put_frame_header(grow(out, kFrameHeaderBytes + body), body, frame_flags);
    *p++ = 0x08;
    p = put_varint(p, item_id);
    *p++ = 0x10;
    p = put_varint(p, item_seq);
    if (!rest.empty()) std::memcpy(p, rest.data(), rest.size());
}

void append_trade_marked_frame(std::string& out, std::span<const uint8_t> frame) {
    const std::span<const uint8_t> body = frame.subspan(kFrameHeaderBytes);
    const uint16_t flags = decode_frame_header(frame.data()).flags;
    uint8_t* p =
        put_frame_header(grow(out, kFrameHeaderBytes + body.size() + 2), body.size() + 2, flags);
    std::memcpy(p, body.data(), body.size());
    p[body.size()] = 0x30;  // Update.trade, field 6, varint
    p[body.size() + 1] = 0x01;
}

namespace {

// The frame with its sequence (and, when `new_id` is set, its item id)
// replaced; see append_resequenced_frame.
void append_rewritten_frame(std::string& out, std::span<const uint8_t> frame,
                            const uint64_t* new_id, uint64_t item_seq) {
    const std::span<const uint8_t> body = frame.subspan(kFrameHeaderBytes);
    const uint16_t flags = decode_frame_header(frame.data()).flags;  // a book's map flag stays
    const uint8_t* p = body.data();
    const uint8_t* const end = p + body.size();
    uint64_t item_id = 0;
    uint64_t old_seq = 0;
    if (p < end && *p++ == 0x08 && read_varint(p, end, end, item_id) && p < end && *p++ == 0x10 &&
        read_varint(p, end, end, old_seq)) {
        return append_update_frame(out, new_id ? *new_id : item_id, item_seq,
                                   {p, static_cast<size_t>(end - p)}, flags);
    }
    const size_t extra = 1 + varint_size(item_seq) + (new_id ? 1 + varint_size(*new_id) : 0);
    uint8_t* q = put_frame_header(grow(out, kFrameHeaderBytes + body.size() + extra),
                                  body.size() + extra, flags);
    std::memcpy(q, body.data(), body.size());
    q += body.size();
    if (new_id) {
        *q++ = 0x08;  // Update.item_id, field 1, varint
        q = put_varint(q, *new_id);
    }
    *q++ = 0x10;  // Update.item_seq, field 2, varint
    put_varint(q, item_seq);
}

}  // namespace

void append_resequenced_frame(std::string& out, std::span<const uint8_t> frame, uint64_t item_seq) {
    append_rewritten_frame(out, frame, nullptr, item_seq);
}

void append_rekeyed_frame(std::string& out, std::span<const uint8_t> frame, uint64_t item_id,
                          uint64_t item_seq) {
    append_rewritten_frame(out, frame, &item_id, item_seq);
}

}  // namespace mdcast::proto
