#include "proto/update_codec.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "proto/book_view.h"
#include "proto/frame.h"
#include "proto/protobuf_reader.h"

namespace mdcast::proto {

namespace {

using Reader = ProtobufReader;
using WireType = ProtobufReader::WireType;
constexpr auto kVarint = WireType::kVarint;
constexpr auto kFixed64 = WireType::kFixed64;
constexpr auto kLengthDelimited = WireType::kLengthDelimited;
constexpr int kRecursionLimit = ProtobufReader::kRecursionLimit;

// Well-formed UTF-8 as protobuf requires for `string` fields: no overlong
// forms, no surrogates, nothing above U+10FFFF. Without this a publisher could
// send an update every client's protobuf parser refuses.
bool valid_utf8(std::span<const uint8_t> s) {
    size_t i = 0;
    // ASCII eight bytes at a time: the common case for instrument names and text fields.
    for (uint64_t word; i + 8 <= s.size(); i += 8) {
        std::memcpy(&word, s.data() + i, 8);
        if (word & 0x8080808080808080ull) break;
    }
    while (i < s.size()) {
        const uint8_t c = s[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        size_t length;
        uint32_t code, min;
        if ((c & 0xE0) == 0xC0) {
            length = 2, code = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            length = 3, code = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            length = 4, code = c & 0x07, min = 0x10000;
        } else {
            return false;
        }
        if (i + length > s.size()) return false;
        for (size_t k = 1; k < length; ++k) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            code = (code << 6) | (s[i + k] & 0x3F);
        }
        if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
        i += length;
    }
    return true;
}

int64_t unzigzag(uint64_t v) {
    return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
}
int32_t unzigzag32(uint32_t v) {
    return static_cast<int32_t>((v >> 1) ^ (~(v & 1) + 1));
}
uint64_t zigzag(int64_t v) {
    return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}

// Merges a Decimal into `entry`: like protobuf, a second decimal_value in the
// same FieldValue only overwrites the members it carries.
bool decode_decimal(std::span<const uint8_t> bytes, int depth, FieldEntry& entry) {
    Reader r(bytes, depth);
    while (!r.done()) {
        uint32_t field, type;
        uint64_t v;
        uint32_t v32;
        if (!r.tag(field, type)) return false;
        if (field == 1 && type == kVarint) {
            if (!r.varint(v)) return false;
            entry.integer = unzigzag(v);
        } else if (field == 2 && type == kVarint) {
            if (!r.varint32(v32)) return false;
            entry.exponent = unzigzag32(v32);  // sint32: zigzag over the low 32 bits
        } else if (!r.skip(field, type)) {
            return false;
        }
    }
    return true;
}

// An empty message type (Blank) may still carry unknown fields; they must parse.
bool well_formed_message(std::span<const uint8_t> bytes, int depth) {
    Reader r(bytes, depth);
    while (!r.done()) {
        uint32_t field, type;
        if (!r.tag(field, type) || !r.skip(field, type)) return false;
    }
    return true;
}

// One member of the FieldValue oneof; `type` was checked by the caller.
bool decode_member(Reader& r, uint32_t field, FieldEntry& entry) {
    uint64_t v = 0;
    std::span<const uint8_t> sub;
    switch (field) {
        case 2:
            if (!r.varint(v)) return false;
            entry.kind = FieldKind::kInt;
            entry.integer = unzigzag(v);
            return true;
        case 3:
            if (entry.kind != FieldKind::kDecimal) {  // a new oneof member starts empty
                entry.kind = FieldKind::kDecimal;
                entry.integer = 0;
                entry.exponent = 0;
            }
            return r.message(sub) && decode_decimal(sub, r.depth() - 1, entry);
        case 4:
            if (!r.fixed64(v)) return false;
            entry.kind = FieldKind::kDouble;
            entry.real = std::bit_cast<double>(v);
            return true;
        case 5:
            if (!r.bytes(sub) || !valid_utf8(sub)) return false;
            entry.kind = FieldKind::kString;
            entry.text = {reinterpret_cast<const char*>(sub.data()), sub.size()};
            return true;
        case 6:
            if (!r.fixed64(v)) return false;
            entry.kind = FieldKind::kTime;
            entry.integer = static_cast<int64_t>(v);
            return true;
        case 7:
            entry.kind = FieldKind::kBlank;
            return r.message(sub) && well_formed_message(sub, r.depth() - 1);
        default:
            return false;
    }
}

// The wire type each FieldValue member must have.
constexpr uint32_t kMemberWireType[8] = {0,        kVarint,          kVarint,  kLengthDelimited,
                                         kFixed64, kLengthDelimited, kFixed64, kLengthDelimited};

// True when *p is a one-byte length that covers exactly the rest, to `end`;
// then steps over it.
bool one_byte_length_to_end(const uint8_t*& p, const uint8_t* end) {
    if (p == end || *p >= 0x80 || *p != end - p - 1) return false;
    ++p;
    return true;
}

// The member of a FieldValue in the shape every encoder writes: its one-byte
// tag `tag` (already read), then the member from `p` to `end`. Decodes it into
// `entry`, which holds the id and is otherwise empty; false, having decided
// nothing, for any other shape. `limit`, at or past `end`, is how far memory
// may be read.
[[gnu::always_inline]] inline bool decode_member_fast(uint8_t tag, const uint8_t* p,
                                                      const uint8_t* const end,
                                                      const uint8_t* limit, int depth,
                                                      FieldEntry& entry) {
    uint64_t v = 0;
    switch (tag) {
        case 0x10:  // int_value, sint64
            if (!read_varint(p, end, limit, v)) return false;
            entry.kind = FieldKind::kInt;
            entry.integer = unzigzag(v);
            return p == end;
        case 0x1A: {  // decimal_value: Decimal { sint64 integer = 1; sint32 exponent = 2; }
            if (depth <= 0 || !one_byte_length_to_end(p, end)) return false;
            entry.kind = FieldKind::kDecimal;
            if (p < end && *p == 0x08) {
                ++p;
                if (!read_varint(p, end, limit, v)) return false;
                entry.integer = unzigzag(v);
            }
            if (p < end && *p == 0x10) {
                ++p;
                if (!read_varint(p, end, limit, v)) return false;
                entry.exponent = unzigzag32(static_cast<uint32_t>(v));
            }
            return p == end;
        }
        case 0x21:  // double_value
        case 0x31:  // time_ns, fixed64
            if (end - p != 8) return false;
            std::memcpy(&v, p, 8);
            if (tag == 0x21) {
                entry.kind = FieldKind::kDouble;
                entry.real = std::bit_cast<double>(v);
            } else {
                entry.kind = FieldKind::kTime;
                entry.integer = static_cast<int64_t>(v);
            }
            return true;
        case 0x2A: {  // string_value
            if (!one_byte_length_to_end(p, end)) return false;
            const std::span<const uint8_t> text(p, end);
            if (!valid_utf8(text)) return false;
            entry.kind = FieldKind::kString;
            entry.text = {reinterpret_cast<const char*>(p), text.size()};
            return true;
        }
        default:
            return false;
    }
}

// The FieldValue shapes every encoder writes (ours and protobuf's): the id,
// then one member, each tag and length in one byte. Decodes them in one
// straight pass, about a third of the general path's instructions (the
// distributor decodes every field of every update it is sent). Returns false,
// having decided nothing, for anything else: the general path then reads the
// value from the start, so what is accepted, and how, never differs from it
// (the differential fuzz target checks both against protobuf). `limit`, at or
// past the value's end, is how far memory may be read.
bool decode_value_fast(std::span<const uint8_t> bytes, const uint8_t* limit, int depth,
                       FieldEntry& entry) {
    const uint8_t* p = bytes.data();
    const uint8_t* const end = p + bytes.size();
    uint64_t v = 0;
    if (p == end || *p++ != 0x08 || !read_varint(p, end, limit, v) || p == end) return false;
    entry = FieldEntry{};
    entry.id = static_cast<uint32_t>(v);  // uint32: high bits dropped
    const uint8_t tag = *p++;
    return decode_member_fast(tag, p, end, limit, depth, entry);
}

// One FieldValue, any shape. A later member of the oneof replaces an earlier
// one, as in protobuf.
[[gnu::noinline]] bool decode_value_general(std::span<const uint8_t> bytes, int depth,
                                            FieldEntry& entry) {
    Reader r(bytes, depth);
    entry = FieldEntry{};
    while (!r.done()) {
        uint32_t field, type;
        if (!r.tag(field, type)) return false;
        if (field >= 8 || type != kMemberWireType[field]) {
            if (!r.skip(field, type)) return false;  // unknown, or known with a foreign type
            continue;
        }
        if (field == 1) {
            if (!r.varint32(entry.id)) return false;  // uint32: high bits dropped
        } else if (!decode_member(r, field, entry)) {
            return false;
        }
    }
    return true;
}

// One FieldValue inside a field list that ends at `limit`.
bool decode_value(std::span<const uint8_t> bytes, const uint8_t* limit, int depth,
                  FieldEntry& entry) {
    return decode_value_fast(bytes, limit, depth, entry) ||
           decode_value_general(bytes, depth, entry);
}

// The usual field-list entry: tag 1 (length-delimited) and a one-byte length.
// Anything else is left to a Reader.
bool usual_entry(const uint8_t*& p, const uint8_t* limit, std::span<const uint8_t>& value) {
    if (limit - p < 2 || p[0] != 0x0A || p[1] >= 0x80 || p[1] > limit - p - 2) return false;
    value = {p + 2, p[1]};
    p += 2 + p[1];
    return true;
}

bool decode_field_list(std::span<const uint8_t> bytes, int depth, std::vector<FieldEntry>& fields) {
    const uint8_t* p = bytes.data();
    const uint8_t* const limit = p + bytes.size();
    while (p != limit) {
        std::span<const uint8_t> value;
        if (depth <= 0 || !usual_entry(p, limit, value)) {  // anything else the general way
            Reader r({p, static_cast<size_t>(limit - p)}, depth);
            uint32_t field, type;
            if (!r.tag(field, type)) return false;
            const bool entry = field == 1 && type == kLengthDelimited;
            if (entry ? !r.message(value) : !r.skip(field, type)) return false;
            p = r.position();
            if (!entry) continue;
        }
        fields.emplace_back();
        if (!decode_value(value, limit, depth - 1, fields.back())) return false;
    }
    return true;
}

// The id of a FieldValue in the usual shape: the id first, in one byte, then
// one member (one-byte tag) that ends exactly at the value's end, so that no
// second id can follow and override it (protobuf keeps the last). Its content
// is not checked: that is for the decode, if the entry is wanted.
[[gnu::always_inline]] inline bool usual_id(std::span<const uint8_t> value, uint32_t& id) {
    const size_t n = value.size();
    if (n < 4 || value[0] != 0x08 || value[1] >= 0x80) return false;
    switch (value[2]) {
        case 0x10:  // int_value: a varint to the end
            if (n > 13 || value[n - 1] >= 0x80) return false;
            for (size_t i = 3; i + 1 < n; ++i) {
                if (value[i] < 0x80) return false;
            }
            break;
        case 0x1A:  // decimal_value, string_value, blank_value: a one-byte length to the end
        case 0x2A:
        case 0x3A:
            if (value[3] != n - 4) return false;
            break;
        case 0x21:  // double_value, time_ns: 8 bytes to the end
        case 0x31:
            if (n != 11) return false;
            break;
        default:
            return false;
    }
    id = value[1];
    return true;
}

// usual_top's last fields (trade, stands_for, first_publish_time_ns), in
// order, each at most once; true when they end the body.
bool usual_trade_tail(const uint8_t* p, const uint8_t* const end, UpdateView& out) {
    uint64_t v = 0;
    if (p < end && *p == 0x30) {  // trade
        ++p;
        if (!read_varint(p, end, end, v)) return false;
        out.trade = v != 0;
    }
    if (p < end && *p == 0x38) {  // stands_for: uint32 keeps the low 32 bits, as protobuf does
        ++p;
        if (!read_varint(p, end, end, v)) return false;
        out.stands_for = static_cast<uint32_t>(v);
    }
    if (p < end && *p == 0x41) {  // first_publish_time_ns, fixed64
        if (end - p < 9) return false;
        std::memcpy(&out.first_publish_time_ns, p + 1, 8);
        p += 9;
    }
    return p == end;
}

// The Update as every encoder writes it: its fields in order, each at most
// once, tags of one byte, the field list's length in one or two bytes. Fills
// `out` and returns true when `body` has that shape; false, having decided
// nothing, for anything else (decode_top then reads it the general way).
bool usual_top(std::span<const uint8_t> body, UpdateView& out) {
    const uint8_t* p = body.data();
    const uint8_t* const end = p + body.size();
    uint64_t v = 0;
    if (p < end && *p == 0x08) {  // item_id
        ++p;
        if (!read_varint(p, end, end, out.item_id)) return false;
    }
    if (p < end && *p == 0x10) {  // item_seq
        ++p;
        if (!read_varint(p, end, end, out.item_seq)) return false;
    }
    if (p < end && *p == 0x19) {  // publish_time_ns, fixed64
        if (end - p < 9) return false;
        std::memcpy(&out.publish_time_ns, p + 1, 8);
        p += 9;
    }
    if (p < end && *p == 0x22) {  // fields
        ++p;
        size_t length;
        if (p < end && *p < 0x80) {
            length = *p++;
        } else if (end - p >= 2 && p[1] < 0x80) {
            length = (p[0] & 0x7Fu) | (size_t{p[1]} << 7);
            p += 2;
        } else {
            return false;
        }
        if (length > static_cast<size_t>(end - p)) return false;
        out.field_bytes = {p, length};
        p += length;
    }
    if (p < end && *p == 0x28) {  // conflated
        ++p;
        if (!read_varint(p, end, end, v)) return false;
        out.conflated = v != 0;
    }
    return usual_trade_tail(p, end, out);
}

// The Update's own fields; the field list decoded too unless `lazy` (then only
// found, and a second list is refused: a lazy reader has room for one).
bool decode_top(std::span<const uint8_t> body, UpdateView& out, bool lazy) {
    out.fields.clear();
    const auto clear_header = [&out] {
        out.item_id = out.item_seq = out.publish_time_ns = 0;
        out.conflated = out.trade = false;
        out.stands_for = 0;
        out.first_publish_time_ns = 0;
        out.field_bytes = {};
        out.map_bytes = {};
    };
    clear_header();
    if (usual_top(body, out)) {
        return lazy || decode_field_list(out.field_bytes, kRecursionLimit - 1, out.fields);
    }
    clear_header();  // usual_top may have filled part of it
    Reader r(body, kRecursionLimit);
    while (!r.done()) {
        uint32_t field, type;
        uint64_t v = 0;
        std::span<const uint8_t> sub;
        if (!r.tag(field, type)) return false;
        bool ok;
        if (field == 1 && type == kVarint) {
            ok = r.varint(out.item_id);
        } else if (field == 2 && type == kVarint) {
            ok = r.varint(out.item_seq);
        } else if (field == 3 && type == kFixed64) {
            ok = r.fixed64(out.publish_time_ns);
        } else if (field == 4 && type == kLengthDelimited) {
            ok = r.message(sub) && !(lazy && out.field_bytes.data() != nullptr);
            if (out.field_bytes.data() == nullptr) out.field_bytes = sub;
            // A message field that appears twice: protobuf merges the lists.
            if (ok && !lazy) ok = decode_field_list(sub, r.depth() - 1, out.fields);
        } else if (field == 5 && type == kVarint) {
            ok = r.varint(v);
            out.conflated = v != 0;
        } else if (field == 6 && type == kVarint) {
            ok = r.varint(v);
            out.trade = v != 0;
        } else if (field == 7 && type == kVarint) {
            ok = r.varint(v);
            out.stands_for = static_cast<uint32_t>(v);
        } else if (field == 8 && type == kFixed64) {
            ok = r.fixed64(out.first_publish_time_ns);
        } else if (field == 9 && type == kLengthDelimited) {
            ok = r.bytes(out.map_bytes);  // bytes: the last one counts, as in protobuf
        } else {
            ok = r.skip(field, type);
        }
        if (!ok) return false;
    }
    return true;
}

// A FieldList inside an Update body, as decode_update reads it.
constexpr int kFieldListDepth = kRecursionLimit - 1;

}  // namespace

// The next FieldList entry's bytes, with unknown FieldList members skipped:
// the usual entry inline, anything else through next_value_general().
[[gnu::always_inline]] inline FieldListCursor::Step FieldListCursor::next_value(
    std::span<const uint8_t>& value) {
    if (usual_entry(p_, end_, value)) return Step::kField;
    return next_value_general(value);
}

FieldListCursor::Step FieldListCursor::next_value_general(std::span<const uint8_t>& value) {
    Reader r({p_, static_cast<size_t>(end_ - p_)}, kFieldListDepth);
    for (;;) {
        if (r.done()) return Step::kEnd;
        uint32_t field, type;
        if (!r.tag(field, type)) return Step::kMalformed;
        if (field == 1 && type == kLengthDelimited) {
            if (!r.message(value)) return Step::kMalformed;
            p_ = value.data() + value.size();
            return Step::kField;
        }
        if (!r.skip(field, type)) return Step::kMalformed;
    }
}

FieldListCursor::Step FieldListCursor::next(FieldEntry& out) {
    std::span<const uint8_t> value;
    const Step step = next_value(value);
    if (step != Step::kField) return step;
    return decode_value(value, end_, kFieldListDepth - 1, out) ? Step::kField : Step::kMalformed;
}

// Entries in the usual shape (usual_entry, usual_id) are stepped over by their
// id inline, without a call; any other is decoded to learn its id, as protobuf
// reads it. Only the entry asked for is decoded.
//
// The entry asked for, when in the usual shape, has its member decoded by
// decode_member_fast straight after the id usual_id read: the same code and the
// same outcome as decode_value_fast on the whole entry (whose id and tag checks
// usual_id has made), without reading the id twice or a call.
FieldListCursor::Step FieldListCursor::find(uint32_t id, FieldEntry& out) {
    for (;;) {
        std::span<const uint8_t> value;
        const Step step = next_value(value);
        if (step != Step::kField) return step;
        uint32_t usual = 0;
        if (usual_id(value, usual)) {
            if (usual != id) continue;
            out = FieldEntry{};
            out.id = usual;
            const uint8_t* const end = value.data() + value.size();
            if (decode_member_fast(value[2], value.data() + 3, end, end_, kFieldListDepth - 1, out))
                return Step::kField;
            // Not a shape decode_value_fast takes either (a blank value): the general way.
            if (!decode_value_general(value, kFieldListDepth - 1, out)) return Step::kMalformed;
            if (out.id == id) return Step::kField;
            continue;
        }
        if (!decode_value(value, end_, kFieldListDepth - 1, out)) return Step::kMalformed;
        if (out.id == id) return Step::kField;
    }
}

bool is_valid_utf8(std::string_view text) {
    return valid_utf8({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

bool decode_update(std::span<const uint8_t> body, UpdateView& out) {
    return decode_top(body, out, false);
}

bool decode_update_header(std::span<const uint8_t> body, UpdateView& out) {
    return decode_top(body, out, true);
}

bool decode_fields(UpdateView& out) {
    out.fields.clear();
    return decode_field_list(out.field_bytes, kFieldListDepth, out.fields);
}

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

void append_resequenced_frame(std::string& out, std::span<const uint8_t> frame, uint64_t item_seq) {
    const std::span<const uint8_t> body = frame.subspan(kFrameHeaderBytes);
    const uint16_t flags = decode_frame_header(frame.data()).flags;  // a book's map flag stays
    const uint8_t* p = body.data();
    const uint8_t* const end = p + body.size();
    uint64_t item_id = 0;
    uint64_t old_seq = 0;
    if (p < end && *p++ == 0x08 && read_varint(p, end, end, item_id) && p < end && *p++ == 0x10 &&
        read_varint(p, end, end, old_seq)) {
        return append_update_frame(out, item_id, item_seq, {p, static_cast<size_t>(end - p)},
                                   flags);
    }
    const size_t extra = 1 + varint_size(item_seq);
    uint8_t* q = put_frame_header(grow(out, kFrameHeaderBytes + body.size() + extra),
                                  body.size() + extra, flags);
    std::memcpy(q, body.data(), body.size());
    q += body.size();
    *q++ = 0x10;  // Update.item_seq, field 2, varint
    put_varint(q, item_seq);
}

}  // namespace mdcast::proto
