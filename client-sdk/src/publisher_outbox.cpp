#include "publisher_outbox.h"

namespace mdcast::sdk {

void OutboxBatch::clear() {
    records.clear();
    fields.clear();
    text.clear();
    wire.clear();
}

size_t OutboxBatch::bytes() const {
    return records.size() * sizeof(OutboxRecord) + fields.size() * sizeof(proto::FieldEntry) +
           text.size() + wire.size();
}

// String fields point into `text`; after it moved (grown, or swapped while
// short enough to live inside the string) they are pointed at the same offsets
// of its new buffer.
void OutboxBatch::rebase(const char* old_base) {
    for (proto::FieldEntry& entry : fields) {
        if (entry.kind != proto::FieldKind::kString) continue;
        const auto offset = static_cast<size_t>(entry.text.data() - old_base);
        entry.text = std::string_view(text).substr(offset, entry.text.size());
    }
}

// Appends to the batch text (names, status texts, string values); string
// fields already kept follow it when it grows into a new buffer.
uint32_t PublisherOutbox::keep(std::string_view text) {
    const auto offset = static_cast<uint32_t>(pending_.text.size());
    if (text.empty()) return offset;
    const char* old_base = pending_.text.data();
    pending_.text.append(text);
    if (pending_.text.data() != old_base) pending_.rebase(old_base);
    return offset;
}

PublisherOutbox::Pushed PublisherOutbox::push(OutboxRecord record,
                                              std::span<const FieldValue> fields,
                                              std::string_view text1, std::string_view text2,
                                              bool bounded, Wake when, bool& wake,
                                              std::span<const uint8_t> map) {
    using Refusal = Pushed::Refusal;
    // An estimate of the wire bytes (the exact size is known only once encoded).
    size_t adding = sizeof(OutboxRecord) + fields.size() * 2 * sizeof(proto::FieldEntry) +
                    text1.size() + text2.size() + map.size();
    for (const FieldValue& f : fields) adding += 2 * f.text.size();
    std::lock_guard lock(mutex_);
    if (bounded && pending_.bytes() + adding > max_bytes_) return {Refusal::kFull, 0};
    const size_t fields_before = pending_.fields.size();
    const size_t text_before = pending_.text.size();
    const size_t wire_before = pending_.wire.size();
    record.text1_offset = keep(text1);
    record.text1_size = static_cast<uint32_t>(text1.size());
    record.text2_offset = keep(text2);
    record.text2_size = static_cast<uint32_t>(text2.size());
    add_fields(record, fields);
    if (record.kind == OutboxRecord::Kind::kUpdate) {
        encode_update(record, map);
    } else if (record.book) {  // a book's refresh: its Map, as the I/O thread applies it
        record.wire_offset = static_cast<uint32_t>(pending_.wire.size());
        record.wire_size = static_cast<uint32_t>(map.size());
        pending_.wire.append(reinterpret_cast<const char*>(map.data()), map.size());
    }
    if (const size_t bound = frame_bound(record, text1, map); bound > max_frame_bytes()) {
        truncate(fields_before, text_before, wire_before);
        return {Refusal::kTooLarge, bound};
    }
    wake = when == Wake::kNow && !wake_sent_;
    if (wake) wake_sent_ = true;
    pending_.records.push_back(record);
    return {};
}

// The body of the frame `record` becomes (0: none of its own, an
// announcement, a registration, a flush).
size_t PublisherOutbox::frame_bound(const OutboxRecord& record, std::string_view text1,
                                    std::span<const uint8_t> map) const {
    switch (record.kind) {
        case OutboxRecord::Kind::kRefresh:
            return refresh_body_bound(pending_.fields_of(record), text1.size(), map.size());
        case OutboxRecord::Kind::kUpdate:
            return update_body_bound(record.wire_size);
        case OutboxRecord::Kind::kStatus:
            return status_body_bound(text1.size());
        default:
            return 0;
    }
}

// A refused record's fields, text and wire bytes taken back (none moved:
// shrinking keeps the buffers where they are).
void PublisherOutbox::truncate(size_t fields, size_t text, size_t wire) {
    pending_.fields.resize(fields);
    pending_.text.resize(text);
    pending_.wire.resize(wire);
}

namespace {
// detail::to_proto_kind without the call, for the per-field copy: the two
// enums agree on every kind but the blank, which the SDK numbers 0.
static_assert(static_cast<int>(FieldKind::kInt) == static_cast<int>(proto::FieldKind::kInt) &&
              static_cast<int>(FieldKind::kDecimal) ==
                  static_cast<int>(proto::FieldKind::kDecimal) &&
              static_cast<int>(FieldKind::kDouble) == static_cast<int>(proto::FieldKind::kDouble) &&
              static_cast<int>(FieldKind::kString) == static_cast<int>(proto::FieldKind::kString) &&
              static_cast<int>(FieldKind::kTime) == static_cast<int>(proto::FieldKind::kTime) &&
              static_cast<int>(FieldKind::kBlank) == 0);
proto::FieldKind entry_kind(FieldKind kind) {
    return kind == FieldKind::kBlank ? proto::FieldKind::kBlank
                                     : static_cast<proto::FieldKind>(kind);
}
}  // namespace

// A string value kept in the batch text; the view stays valid through growth
// and take() (OutboxBatch::rebase).
std::string_view PublisherOutbox::keep_value(std::string_view value) {
    const uint32_t offset = keep(value);
    return std::string_view(pending_.text).substr(offset, value.size());
}

// The fields as the I/O thread merges them into the item's image.
void PublisherOutbox::add_fields(OutboxRecord& record, std::span<const FieldValue> fields) {
    record.first_field = static_cast<uint32_t>(pending_.fields.size());
    record.field_count = static_cast<uint32_t>(fields.size());
    for (const FieldValue& f : fields) {
        const std::string_view text =
            f.kind == FieldKind::kString ? keep_value(f.text) : std::string_view{};
        pending_.fields.push_back(
            proto::FieldEntry{f.id, entry_kind(f.kind), f.exponent, f.integer, f.real, text});
    }
}

// The update's body without item id and sequence, encoded once, here.
void PublisherOutbox::encode_update(OutboxRecord& record, std::span<const uint8_t> map) {
    const size_t offset = pending_.wire.size();
    proto::append_update_rest(pending_.wire, record.stamp, pending_.fields_of(record));
    if (record.trade) pending_.wire.append("\x30\x01", 2);  // Update.trade = true (field 6)
    if (record.book) {                                      // Update.map (field 9, bytes)
        pending_.wire.push_back(0x4A);
        for (uint64_t n = map.size();; n >>= 7) {
            pending_.wire.push_back(static_cast<char>(n < 0x80 ? n : (n & 0x7F) | 0x80));
            if (n < 0x80) break;
        }
        pending_.wire.append(reinterpret_cast<const char*>(map.data()), map.size());
    }
    record.wire_offset = static_cast<uint32_t>(offset);
    record.wire_size = static_cast<uint32_t>(pending_.wire.size() - offset);
}

bool PublisherOutbox::wake_owed() {
    std::lock_guard lock(mutex_);
    if (wake_sent_ || pending_.records.empty()) return false;
    wake_sent_ = true;
    return true;
}

void PublisherOutbox::take(OutboxBatch& out) {
    out.clear();
    const char* old_base = nullptr;
    {
        std::lock_guard lock(mutex_);
        old_base = pending_.text.data();
        std::swap(out, pending_);
        // Having taken something, the I/O thread comes back for more: what
        // is pushed meanwhile needs no wake-up until a take() finds nothing.
        wake_sent_ = !out.records.empty();
    }
    if (out.text.data() != old_base) out.rebase(old_base);  // a short text moved with the swap
}

bool PublisherOutbox::empty() const {
    std::lock_guard lock(mutex_);
    return pending_.records.empty();
}

}  // namespace mdcast::sdk
