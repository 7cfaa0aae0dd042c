// EventBatch: owned copies of consumer events, handed to Python many at a time.
//
// An mdcast::Event is valid only during the handler call, so the I/O thread
// copies each one into the batch that is filling. Records, fields and text of
// every event live in a few vectors that keep their capacity when the batch is
// cleared and reused, so steady receiving allocates nothing per event. Python
// Event objects hold a reference to their batch and an index; values become
// Python objects only when asked for (lazy decoding).
//
// Not thread-safe: the EventChannel hands a batch to one side at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/dictionary.h"
#include "mdcast/event.h"
#include "mdcast/types.h"

namespace mdcast::python {

// A piece of the batch's text: offset and size.
struct TextRef {
    uint32_t offset = 0;
    uint32_t size = 0;
};

// One field as received; a string value is a TextRef into the batch.
struct StoredField {
    uint32_t id = 0;
    FieldKind kind = FieldKind::kBlank;
    int32_t exponent = 0;
    int64_t integer = 0;
    double real = 0;
    TextRef text;
};

// One entry of a book refresh or one action of a book update (mdcast/book.h):
// its key (a price, or a name in the batch's text), action and fields.
struct StoredEntry {
    bool is_price = false;
    MapAction action = MapAction::kAdd;
    int32_t exponent = 0;
    int64_t mantissa = 0;
    TextRef name;
    uint32_t first_field = 0, field_count = 0;
};

struct EventRecord {
    EventType type = EventType::kStatus;
    Domain domain = Domain::kMarketPrice;
    bool snapshot = false;
    bool conflated = false;
    bool trade = false;
    uint32_t stands_for = 0;
    uint64_t first_publish_time_ns = 0;
    StreamState stream = StreamState::kOpen;
    DataState data = DataState::kOk;
    StatusCode code = StatusCode::kNone;
    uint64_t handle = 0;
    uint64_t sequence = 0;
    uint64_t publish_time_ns = 0;
    uint64_t receive_time_ns = 0;
    TextRef service, item, text;
    uint32_t first_field = 0, field_count = 0;
    // kConnection: index into connections(); kDirectory: range of services().
    uint32_t first_extra = 0, extra_count = 0;
    // A book's refresh or update: range of entries().
    uint32_t first_entry = 0, entry_count = 0;
};

class EventBatch {
  public:
    explicit EventBatch(std::shared_ptr<const Dictionary> dictionary)
        : dictionary_(std::move(dictionary)) {}

    void append(const Event& event);
    // Removes the records of `handle` (unsubscribed before Python took them);
    // returns how many.
    size_t drop(uint64_t handle);
    void clear();

    size_t size() const { return records_.size(); }
    const EventRecord& record(size_t index) const { return records_[index]; }
    std::string_view text(TextRef ref) const {
        return std::string_view(text_).substr(ref.offset, ref.size);
    }
    std::span<const StoredField> fields(const EventRecord& r) const {
        return std::span(fields_).subspan(r.first_field, r.field_count);
    }
    const StoredField* field(const EventRecord& r, uint32_t id) const;
    std::span<const StoredEntry> entries(const EventRecord& r) const {
        return std::span(entries_).subspan(r.first_entry, r.entry_count);
    }
    std::span<const StoredField> fields(const StoredEntry& e) const {
        return std::span(fields_).subspan(e.first_field, e.field_count);
    }
    const ConnectionEvent& connection(const EventRecord& r) const {
        return connections_[r.first_extra];
    }
    std::span<const ServiceInfo> services(const EventRecord& r) const {
        return std::span(services_).subspan(r.first_extra, r.extra_count);
    }
    const Dictionary* dictionary() const { return dictionary_.get(); }

  private:
    TextRef keep(std::string_view text);
    void keep_fields(std::span<const FieldValue> values);
    void keep_entries(EventRecord& r, const Event& event);

    std::shared_ptr<const Dictionary> dictionary_;
    std::vector<EventRecord> records_;
    std::vector<StoredField> fields_;
    std::vector<StoredEntry> entries_;
    std::string text_;
    std::vector<ConnectionEvent> connections_;
    std::vector<ServiceInfo> services_;
};

}  // namespace mdcast::python
