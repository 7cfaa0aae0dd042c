#include "proto/update_codec.h"

#include <bit>
#include <cstring>

#include "proto/protobuf_reader.h"
#include "proto/zigzag.h"

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

}  // namespace mdcast::proto
