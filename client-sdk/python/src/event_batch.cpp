#include "event_batch.h"

namespace mdcast::python {

TextRef EventBatch::keep(std::string_view text) {
    TextRef ref{static_cast<uint32_t>(text_.size()), static_cast<uint32_t>(text.size())};
    text_.append(text);
    return ref;
}

void EventBatch::append(const Event& event) {
    EventRecord& r = records_.emplace_back();
    r.type = event.type();
    r.snapshot = event.snapshot();
    r.conflated = event.conflated();
    r.trade = event.trade();
    r.stands_for = event.stands_for();
    r.first_publish_time_ns = event.first_publish_time_ns();
    r.stream = event.state().stream;
    r.data = event.state().data;
    r.code = event.state().code;
    r.handle = event.handle().id;
    r.sequence = event.sequence();
    r.publish_time_ns = event.publish_time_ns();
    r.receive_time_ns = event.receive_time_ns();
    r.service = keep(event.service());
    r.item = keep(event.item());
    r.text = keep(event.state().text);
    r.first_field = static_cast<uint32_t>(fields_.size());
    r.field_count = static_cast<uint32_t>(event.fields().size());
    keep_fields(event.fields());
    r.domain = event.domain();
    if (event.has_book_entries()) keep_entries(r, event);
    if (r.type == EventType::kConnection) {
        r.first_extra = static_cast<uint32_t>(connections_.size());
        r.extra_count = 1;
        connections_.push_back(event.connection());
        r.text = keep(event.connection().text);
    } else if (r.type == EventType::kDirectory) {
        r.first_extra = static_cast<uint32_t>(services_.size());
        r.extra_count = static_cast<uint32_t>(event.services().size());
        services_.insert(services_.end(), event.services().begin(), event.services().end());
    }
}

void EventBatch::keep_fields(std::span<const FieldValue> values) {
    for (const FieldValue& value : values) {
        fields_.push_back(StoredField{value.id, value.kind, value.exponent, value.integer,
                                      value.real, keep(value.text)});
    }
}

void EventBatch::keep_entries(EventRecord& r, const Event& event) {
    const std::vector<BookEntry> entries = event.book_entries();
    r.first_entry = static_cast<uint32_t>(entries_.size());
    r.entry_count = static_cast<uint32_t>(entries.size());
    for (const BookEntry& entry : entries) {
        StoredEntry& e = entries_.emplace_back();
        e.is_price = entry.key.is_price();
        e.action = entry.action;
        e.exponent = entry.key.exponent();
        e.mantissa = entry.key.mantissa();
        e.name = keep(entry.key.name());
        e.first_field = static_cast<uint32_t>(fields_.size());
        e.field_count = static_cast<uint32_t>(entry.fields.size());
        keep_fields(entry.fields);
    }
}

size_t EventBatch::drop(uint64_t handle) {
    // Their fields and text stay behind unused until clear(): rare, and cheaper
    // than compacting.
    return std::erase_if(records_, [handle](const EventRecord& r) { return r.handle == handle; });
}

void EventBatch::clear() {
    records_.clear();
    fields_.clear();
    entries_.clear();
    text_.clear();
    connections_.clear();
    services_.clear();
}

const StoredField* EventBatch::field(const EventRecord& r, uint32_t id) const {
    for (const StoredField& f : fields(r)) {
        if (f.id == id) return &f;
    }
    return nullptr;
}

}  // namespace mdcast::python
