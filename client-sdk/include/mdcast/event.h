// What a Consumer hands the application: one Event per refresh, update, item
// status, connection change or directory answer.
//
// An Event is only valid during the handler call it is passed to: the SDK
// reuses its storage for the next event (that is how the receive path avoids
// allocating per update). Copy out what you need to keep.
//
// An update's fields are decoded when asked for, not before: the event holds
// the update's encoded field list, field(id) and field(name) decode just that
// field, and fields() decodes them all (once per event). An application pays
// only for the fields it reads. String values are views into the received
// bytes, valid for the handler call. A field list found malformed while being
// read ends early (fields() holds the well-formed part, field() returns
// nullptr past the fault); the server has checked every update it forwards.
// Reading fields is for the handler's thread: an Event is not shared.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/book.h"
#include "mdcast/export.h"
#include "mdcast/types.h"

namespace mdcast {

class Dictionary;
namespace detail {
class EventWriter;
}

// Names one subscription of one Consumer. Handles are never reused while the
// Consumer exists; the zero handle names nothing.
struct ItemHandle {
    uint64_t id = 0;
    explicit operator bool() const { return id != 0; }
    bool operator==(const ItemHandle&) const = default;
};

enum class EventType : uint8_t {
    kRefresh,     // a full image: replace what you hold for the item
    kUpdate,      // changed fields, in per-item sequence order
    kStatus,      // the item's state changed (suspect, closed, recovering ...)
    kConnection,  // the connection to a server changed (connection())
    kDirectory,   // answer to request_directory() (services())
};

MDCAST_API std::string_view event_type_name(EventType type);
MDCAST_API std::string to_string(EventType type);
MDCAST_API std::ostream& operator<<(std::ostream& out, EventType type);

class MDCAST_API Event {
  public:
    Event();
    ~Event();
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;

    EventType type() const { return type_; }

    // ---- item events (kRefresh, kUpdate, kStatus) ----
    ItemHandle handle() const { return handle_; }
    const std::string& service() const { return *service_ref_; }
    const std::string& item() const { return *item_ref_; }
    // Per-item sequence number. Across one subscription the sequence of
    // delivered refreshes and updates never goes back and never repeats, also
    // across a failover; a refresh may jump ahead (the image covers the gap).
    uint64_t sequence() const { return sequence_; }
    // kUpdate: the publisher's CLOCK_REALTIME stamp in ns; 0 when not stamped.
    uint64_t publish_time_ns() const { return publish_time_ns_; }
    // CLOCK_REALTIME in ns when the I/O thread read the message from the
    // socket (one clock reading per read, shared by the messages it brought).
    uint64_t receive_time_ns() const { return receive_time_ns_; }
    // kRefresh answering snapshot(): nothing follows on this handle.
    bool snapshot() const { return snapshot_; }
    // kUpdate: several updates merged by the server for a slow consumer.
    bool conflated() const { return conflated_; }
    // kUpdate: the publisher marked it a trade; conflation never merges one away.
    bool trade() const { return trade_; }
    // kUpdate with conflate_ms: how many published updates this conflated one
    // stands for (0 when not counted, e.g. slow-consumer conflation) and the
    // stamp of the first of them (publish_time_ns() - this = the span covered).
    uint32_t stands_for() const { return stands_for_; }
    uint64_t first_publish_time_ns() const { return first_publish_time_ns_; }
    // kRefresh and kStatus: the item's state. kUpdate: open/ok.
    const ItemState& state() const { return state_; }

    // kRefresh: the image (only the view's fields with a view); kUpdate: the
    // changed fields, decoded at the first call.
    std::span<const FieldValue> fields() const;
    // The field with this id, or nullptr. Pointers stay valid for the handler call.
    const FieldValue* field(uint32_t id) const;
    // By dictionary name; nullptr when the consumer has no dictionary, the name
    // is unknown, or the field is not in this event.
    const FieldValue* field(std::string_view name) const;
    // field(name)'s value as a number (decimals scaled, FieldValue::to_double);
    // nullopt when field(name) is nullptr or the field is blank or a string.
    std::optional<double> number(std::string_view name) const;
    // field(name)'s value as text (FieldValue::to_string: decimals exactly,
    // "101.25"); nullopt when field(name) is nullptr.
    std::optional<std::string> text(std::string_view name) const;

    // ---- books (mdcast/book.h, docs/books.md) ----
    // kRefresh: the item's domain (kMarketPrice: a field list; fields() are
    // then the image, for a book its summary).
    Domain domain() const { return domain_; }
    // A book's refresh: every entry (kAdd), in key order; a book's update: its
    // actions in the order they apply; empty otherwise. Decoded at each call;
    // string values view the received bytes, valid for the handler call.
    std::vector<BookEntry> book_entries() const;
    bool has_book_entries() const { return !map_bytes_.empty(); }

    // ---- kConnection ----
    const ConnectionEvent& connection() const { return connection_; }

    // ---- kDirectory ----
    std::span<const ServiceInfo> services() const { return services_; }

  private:
    friend class detail::EventWriter;

    EventType type_ = EventType::kStatus;
    ItemHandle handle_;
    // The names: the subscription's own strings while the handler runs on the
    // I/O thread, or copies in service_/item_ for a queued event.
    const std::string* service_ref_ = &service_;
    const std::string* item_ref_ = &item_;
    std::string service_;
    std::string item_;
    uint64_t sequence_ = 0;
    uint64_t publish_time_ns_ = 0;
    uint64_t receive_time_ns_ = 0;
    bool snapshot_ = false;
    bool conflated_ = false;
    bool trade_ = false;
    uint32_t stands_for_ = 0;
    uint64_t first_publish_time_ns_ = 0;
    ItemState state_;
    // kUpdate: the encoded field list: the received bytes while the handler
    // runs on the I/O thread, or a copy in field_copy_ for a queued event.
    std::span<const uint8_t> field_bytes_;
    std::string field_copy_;
    mutable bool all_decoded_ = true;         // fields_ holds every field
    mutable std::vector<FieldValue> fields_;  // kRefresh always, kUpdate once fields() ran
    mutable std::vector<FieldValue> found_;   // kUpdate: fields decoded by field(id)
    std::string text_;  // kRefresh: backing store of the fields' string values
    // A book's encoded Map: the received bytes (kUpdate on the I/O thread) or map_copy_.
    Domain domain_ = Domain::kMarketPrice;
    std::span<const uint8_t> map_bytes_;
    std::string map_copy_;
    ConnectionEvent connection_;
    std::vector<ServiceInfo> services_;
    const Dictionary* dictionary_ = nullptr;
};

}  // namespace mdcast
