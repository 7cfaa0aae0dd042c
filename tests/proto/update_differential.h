// The update decoder (proto/update_codec.h) judged against libprotobuf on the same
// bytes: both accept or both refuse, and what both accept decodes to the same
// values and re-encodes to bytes protobuf reads back as the same message. Used by
// the unit tests and by the differential fuzz target (tests/fuzz/update_decoder_fuzz.cpp).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <sstream>
#include <string>
#include <string_view>

#include "proto/frame.h"
#include "proto/update_codec.h"
#include "wire/common.pb.h"

namespace mdcast::proto::testing {

// Empty when `field` decoded by us equals protobuf's FieldValue; otherwise what differs.
inline std::string field_difference(const FieldEntry& ours,
                                    const ::mdcast::wire::v1::FieldValue& theirs) {
    using Case = ::mdcast::wire::v1::FieldValue::ValueCase;
    std::ostringstream why;
    if (ours.id != theirs.id()) why << "id " << ours.id << " vs " << theirs.id() << "; ";
    switch (theirs.value_case()) {
        case Case::VALUE_NOT_SET:
            if (ours.kind != FieldKind::kNone) why << "kind set, protobuf has none; ";
            break;
        case Case::kIntValue:
            if (ours.kind != FieldKind::kInt || ours.integer != theirs.int_value())
                why << "int " << ours.integer << " vs " << theirs.int_value() << "; ";
            break;
        case Case::kDecimalValue:
            if (ours.kind != FieldKind::kDecimal ||
                ours.integer != theirs.decimal_value().mantissa() ||
                ours.exponent != theirs.decimal_value().exponent())
                why << "decimal " << ours.integer << "e" << ours.exponent << " vs "
                    << theirs.decimal_value().mantissa() << "e" << theirs.decimal_value().exponent()
                    << "; ";
            break;
        case Case::kDoubleValue:
            if (ours.kind != FieldKind::kDouble ||
                std::bit_cast<uint64_t>(ours.real) !=
                    std::bit_cast<uint64_t>(theirs.double_value()))
                why << "double differs; ";
            break;
        case Case::kStringValue:
            if (ours.kind != FieldKind::kString || ours.text != theirs.string_value())
                why << "string differs; ";
            break;
        case Case::kTimeNs:
            if (ours.kind != FieldKind::kTime || ours.integer != theirs.time_ns())
                why << "time differs; ";
            break;
        case Case::kBlank:
            if (ours.kind != FieldKind::kBlank) why << "blank expected; ";
            break;
    }
    return why.str();
}

// Empty when decode_update and protobuf agree on `body`; otherwise what differs.
inline std::string update_disagreement(std::span<const uint8_t> body, UpdateView& ours) {
    ::mdcast::wire::v1::Update theirs;
    const bool ours_ok = decode_update(body, ours);
    const bool theirs_ok = theirs.ParseFromArray(body.data(), static_cast<int>(body.size()));
    if (ours_ok != theirs_ok)
        return ours_ok ? "decode_update accepts what protobuf refuses"
                       : "decode_update refuses what protobuf accepts";
    if (!ours_ok) return {};
    std::ostringstream why;
    if (ours.item_id != theirs.item_id()) why << "item_id; ";
    if (ours.item_seq != theirs.item_seq()) why << "item_seq; ";
    if (ours.publish_time_ns != theirs.publish_time_ns()) why << "publish_time_ns; ";
    if (ours.conflated != theirs.conflated()) why << "conflated; ";
    if (std::string_view(reinterpret_cast<const char*>(ours.map_bytes.data()),
                         ours.map_bytes.size()) != theirs.map())
        why << "map; ";
    if (ours.fields.size() != static_cast<size_t>(theirs.fields().fields_size())) {
        why << ours.fields.size() << " fields vs " << theirs.fields().fields_size();
        return why.str();
    }
    for (size_t i = 0; i < ours.fields.size(); ++i) {
        const std::string d =
            field_difference(ours.fields[i], theirs.fields().fields(static_cast<int>(i)));
        if (!d.empty()) why << "field " << i << ": " << d;
    }
    if (!why.str().empty()) return why.str();

    // What we re-encode (views, conflation) must be the same message to protobuf,
    // less the unknown fields we drop.
    std::string frame;
    append_update_frame(frame, ours);
    ::mdcast::wire::v1::Update back;
    if (!back.ParseFromArray(frame.data() + kFrameHeaderBytes,
                             static_cast<int>(frame.size() - kFrameHeaderBytes)))
        return "protobuf refuses our re-encoding";
    // We always write a field list, possibly empty; protobuf only when it read one.
    theirs.DiscardUnknownFields();
    theirs.mutable_fields();
    back.mutable_fields();
    if (back.SerializeAsString() != theirs.SerializeAsString())
        return "re-encoding differs: " + back.ShortDebugString() + " vs " +
               theirs.ShortDebugString();
    return {};
}

// Empty when the lazy reading the SDK consumer does (decode_update_header, then
// FieldListCursor over the field list) agrees with decode_update on `body`, which
// decode_update accepted into `eager`; otherwise what differs. The header decode
// may refuse a body decode_update takes (two field lists); whatever it takes, it
// must read alike, and the cursor must give every field, and find() the first
// with each id, equal to the eager ones.
inline std::string lazy_read_disagreement(std::span<const uint8_t> body, const UpdateView& eager) {
    UpdateView lazy;
    if (!decode_update_header(body, lazy)) return {};
    if (lazy.item_id != eager.item_id || lazy.item_seq != eager.item_seq ||
        lazy.publish_time_ns != eager.publish_time_ns || lazy.conflated != eager.conflated)
        return "decode_update_header reads the header differently";
    const auto same = [](const FieldEntry& a, const FieldEntry& b) {
        return a.id == b.id && a.kind == b.kind && a.integer == b.integer &&
               a.exponent == b.exponent && a.text == b.text &&
               std::memcmp(&a.real, &b.real, sizeof a.real) == 0;
    };
    std::ostringstream why;
    FieldListCursor all(lazy.field_bytes);
    FieldEntry entry;
    for (size_t i = 0; i < eager.fields.size(); ++i) {
        if (all.next(entry) != FieldListCursor::Step::kField)
            return "cursor ends before field " + std::to_string(i);
        if (!same(entry, eager.fields[i])) why << "cursor field " << i << " differs; ";
    }
    if (all.next(entry) != FieldListCursor::Step::kEnd) why << "cursor reads past the fields; ";
    for (size_t i = 0; i < eager.fields.size(); ++i) {
        const FieldEntry& want = eager.fields[i];
        size_t first = 0;
        while (eager.fields[first].id != want.id) ++first;
        if (first != i) continue;  // find() gives the first with the id
        FieldListCursor one(lazy.field_bytes);
        if (one.find(want.id, entry) != FieldListCursor::Step::kField || !same(entry, want))
            why << "find(" << want.id << ") differs; ";
    }
    return why.str();
}

}  // namespace mdcast::proto::testing
