#include "proto/field_image.h"

#include <algorithm>
#include <cstring>

#include "proto/book_image.h"

namespace mdcast::proto {

namespace wire = mdcast::wire::v1;

namespace {

void copy_value(const wire::FieldValue& in, FieldImage::Slot& out) {
    out.id = in.id();
    switch (in.value_case()) {
        case wire::FieldValue::kIntValue:
            out.kind = FieldKind::kInt;
            out.integer = in.int_value();
            break;
        case wire::FieldValue::kDecimalValue:
            out.kind = FieldKind::kDecimal;
            out.integer = in.decimal_value().mantissa();
            out.exponent = in.decimal_value().exponent();
            break;
        case wire::FieldValue::kDoubleValue:
            out.kind = FieldKind::kDouble;
            out.real = in.double_value();
            break;
        case wire::FieldValue::kStringValue:
            out.kind = FieldKind::kString;
            out.text = in.string_value();
            break;
        case wire::FieldValue::kTimeNs:
            out.kind = FieldKind::kTime;
            out.integer = in.time_ns();
            break;
        case wire::FieldValue::kBlank:
            out.kind = FieldKind::kBlank;
            break;
        case wire::FieldValue::VALUE_NOT_SET:
            out.kind = FieldKind::kNone;
            break;
    }
}

void copy_entry(const FieldEntry& in, FieldImage::Slot& out) {
    out.kind = in.kind;
    out.exponent = in.exponent;
    if (in.kind == FieldKind::kDouble) {
        out.real = in.real;
    } else {
        out.integer = in.integer;
    }
    if (in.kind != FieldKind::kString) return;
    // A string field usually keeps its length from one update to the next: an
    // overwrite in place costs a copy, where assign() would go through the
    // general replace (which allows for overlapping buffers, not possible here:
    // the text points into the update's bytes).
    if (out.text.size() == in.text.size()) {
        if (!in.text.empty()) std::memcpy(out.text.data(), in.text.data(), in.text.size());
    } else {
        out.text.assign(in.text);
    }
}

void write_value(const FieldImage::Slot& in, wire::FieldValue& out) {
    out.set_id(in.id);
    switch (in.kind) {
        case FieldKind::kInt:
            out.set_int_value(in.integer);
            break;
        case FieldKind::kDecimal:
            out.mutable_decimal_value()->set_mantissa(in.integer);
            out.mutable_decimal_value()->set_exponent(in.exponent);
            break;
        case FieldKind::kDouble:
            out.set_double_value(in.real);
            break;
        case FieldKind::kString:
            out.set_string_value(in.text);
            break;
        case FieldKind::kTime:
            out.set_time_ns(in.integer);
            break;
        case FieldKind::kBlank:
            out.mutable_blank();
            break;
        case FieldKind::kNone:
            break;
    }
}

bool same_slot(const FieldImage::Slot& a, const FieldImage::Slot& b) {
    if (a.kind != b.kind) return false;
    switch (a.kind) {
        case FieldKind::kDecimal:
            return a.exponent == b.exponent && a.integer == b.integer;
        case FieldKind::kInt:
        case FieldKind::kTime:
            return a.integer == b.integer;
        case FieldKind::kDouble:
            return a.real == b.real;
        case FieldKind::kString:
            return a.text == b.text;
        default:
            return true;
    }
}

}  // namespace

// Two images of one item from two feed handlers usually list their fields in
// the same order: compared pairwise, with a look-up only where the ids differ.
bool same_values(const FieldImage& a, const FieldImage& b) {
    if (a.size() != b.size() || a.book() || b.book()) return false;
    const auto& theirs = b.slots();
    for (size_t i = 0; i < theirs.size(); ++i) {
        const auto& slot = a.slots()[i];
        const auto* other = theirs[i].id == slot.id ? &theirs[i] : b.find(slot.id);
        if (!other || !same_slot(slot, *other)) return false;
    }
    return true;
}

FieldEntry FieldImage::Slot::entry() const {
    FieldEntry out{id, kind, exponent, 0, 0, {}};
    if (kind == FieldKind::kDouble) {
        out.real = real;
    } else {
        out.integer = integer;
    }
    if (kind == FieldKind::kString) out.text = text;
    return out;
}

FieldImage::FieldImage() = default;
FieldImage::~FieldImage() = default;
FieldImage::FieldImage(FieldImage&& other) noexcept = default;
FieldImage& FieldImage::operator=(FieldImage&& other) noexcept = default;

FieldImage::FieldImage(const FieldImage& other) : slots_(other.slots_) {
    if (other.book_) book_ = std::make_unique<BookImage>(*other.book_);
}

FieldImage& FieldImage::operator=(const FieldImage& other) {
    if (this != &other) *this = FieldImage(other);
    return *this;
}

void FieldImage::clear() {
    slots_.clear();
    book_.reset();
}

void FieldImage::set_book(std::unique_ptr<BookImage> book) {
    book_ = std::move(book);
}

void FieldImage::assign(const wire::FieldList& fields) {
    slots_.clear();
    // Exactly what the image needs: doubling growth would leave a 100,000-item
    // cache with half its slot memory unused.
    if (slots_.capacity() > static_cast<size_t>(fields.fields_size()) * 2) slots_.shrink_to_fit();
    slots_.reserve(static_cast<size_t>(fields.fields_size()));
    for (const auto& field : fields.fields()) copy_value(field, slot_for(field.id()));
}

FieldImage::Slot& FieldImage::slot_for(uint32_t id) {
    auto it =
        std::find_if(slots_.begin(), slots_.end(), [id](const Slot& s) { return s.id == id; });
    if (it != slots_.end()) return *it;
    slots_.emplace_back().id = id;
    return slots_.back();
}

const FieldImage::Slot* FieldImage::find(uint32_t id) const {
    auto it =
        std::find_if(slots_.begin(), slots_.end(), [id](const Slot& s) { return s.id == id; });
    return it == slots_.end() ? nullptr : &*it;
}

// Updates usually carry their fields in the image's order (the publisher
// builds them the same way every time), so each field is looked for first in
// the slot after the previous one's, then in the rest of the image after it
// and only then before it: a merge is one comparison per field when the order
// holds, and a field the refresh did not have (appended at the end) is found
// without searching the fields already merged.
void FieldImage::apply(std::span<const FieldEntry> fields) {
    size_t next = 0;
    for (const FieldEntry& entry : fields) {
        size_t at = next;
        while (at < slots_.size() && slots_[at].id != entry.id) ++at;
        if (at == slots_.size()) at = static_cast<size_t>(&slot_for(entry.id) - slots_.data());
        copy_entry(entry, slots_[at]);
        next = at + 1;
    }
}

void FieldImage::to_field_list(wire::FieldList& out, const std::vector<uint32_t>* view) const {
    out.Clear();
    for (const Slot& slot : slots_) {
        if (view && !std::binary_search(view->begin(), view->end(), slot.id)) continue;
        write_value(slot, *out.add_fields());
    }
}

}  // namespace mdcast::proto
