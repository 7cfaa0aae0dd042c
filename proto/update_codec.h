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
    bool trade = false;                    // never merged away by conflation
    uint32_t stands_for = 0;               // conflated: updates merged into it (0 = not counted)
    uint64_t first_publish_time_ns = 0;    // conflated: the first merged update's stamp
    std::span<const uint8_t> field_bytes;  // the encoded FieldList, inside the decoded body
    // A book's entry actions: an encoded Map, inside the decoded body (empty: a
    // field-list update). Not parsed here: proto/book_codec.h does, where applied.
    std::span<const uint8_t> map_bytes;
    std::vector<FieldEntry> fields;  // reused between decodes: no allocation once warm
};

// Well-formed UTF-8 as protobuf requires of `string` fields (no overlong
// forms, no surrogates, nothing above U+10FFFF).
bool is_valid_utf8(std::string_view text);

// Decodes an Update body. False when the bytes are not a valid Update.
bool decode_update(std::span<const uint8_t> body, UpdateView& out);
// Decodes only the Update's own fields and finds its field list (field_bytes);
// `fields` is left empty. For readers that decode fields only when asked (the
// SDK consumer). False when the top level is not well-formed, and for the rare
// body with two field lists (protobuf merges them; decode_update reads both);
// the field list is checked only as it is read (decode_fields, FieldListCursor).
bool decode_update_header(std::span<const uint8_t> body, UpdateView& out);
// Fills out.fields from out.field_bytes. False when they are not a valid FieldList.
bool decode_fields(UpdateView& out);

// Reads a FieldList's entries one at a time, bounds-checked like decode_update.
class FieldListCursor {
  public:
    enum class Step : uint8_t { kField, kEnd, kMalformed };
    explicit FieldListCursor(std::span<const uint8_t> bytes)
        : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}
    // The next entry, decoded into `out`.
    Step next(FieldEntry& out);
    // The next entry whose id is `id` (the id protobuf reads: the last one in
    // the entry). Entries in the shape every encoder writes (the id first in one
    // byte, then one member to the end) are skipped by their id without decoding
    // their values; any other is decoded to learn its id.
    Step find(uint32_t id, FieldEntry& out);

  private:
    Step next_value(std::span<const uint8_t>& value);
    Step next_value_general(std::span<const uint8_t>& value);
    const uint8_t* p_;
    const uint8_t* end_;
};

// Appends a complete Update frame (frame header + body) to `out`. With `view`
// (sorted field ids) only those fields are written, in the summary and in each
// of a book's entries (proto/book_view.h); false, nothing appended, for a
// book's update of which nothing is left in the view.
bool append_update_frame(std::string& out, const UpdateView& update,
                         const std::vector<uint32_t>* view = nullptr);
// An Update body without its item id and sequence: the publish time (0: left
// out) and the field list. The SDK publisher encodes this on the application's
// thread (appended to `out`); append_update_frame(out, item_id, item_seq,
// rest) completes it.
void append_update_rest(std::string& out, uint64_t publish_time_ns,
                        std::span<const FieldEntry> fields);
// Appends an Update frame whose body is `item_id` and `item_seq` followed by
// `rest`, an encoded Update body without them (protobuf reads fields in any
// order): for an update encoded before its item had an id.
void append_update_frame(std::string& out, uint64_t item_id, uint64_t item_seq,
                         std::span<const uint8_t> rest, uint16_t frame_flags = 0);
// Appends the entries of a FieldList (each FieldValue with its tag), without
// the list's own tag and length: for encoders of other messages (book entries).
void append_field_values(std::string& out, std::span<const FieldEntry> fields);
// The bytes append_field_values writes for `fields` (sized, not written): the
// SDK publisher bounds a refresh's frame with it before anything is framed.
size_t field_values_bytes(std::span<const FieldEntry> fields);
// Appends `frame`, a complete Update frame, marked a trade: its body with
// `trade = true` added at the end (protobuf keeps the last value of a field),
// the rest of its bytes (and its frame flags) as they were.
void append_trade_marked_frame(std::string& out, std::span<const uint8_t> frame);
// Appends `frame`, a complete Update frame, with its item sequence replaced by
// `item_seq` (a distributor's standby switch continues an item's sequence over
// another publisher's). The usual shape (item id, then sequence, first) is
// rewritten in place; any other gets `item_seq` added at the end (protobuf
// keeps the last value of a field).
void append_resequenced_frame(std::string& out, std::span<const uint8_t> frame, uint64_t item_seq);
// The same with the item id replaced too (a server serves a standby's item to
// the subscribers of another member's item of that name, at its sequence).
void append_rekeyed_frame(std::string& out, std::span<const uint8_t> frame, uint64_t item_id,
                          uint64_t item_seq);

}  // namespace mdcast::proto
