// What a Consumer hands the application: one Event per refresh, update, item
// status, connection change or directory answer.
//
// An Event is only valid during the handler call it is passed to: the SDK
// reuses its storage for the next event (that is how the receive path avoids
// allocating per update). Copy out what you need to keep.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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
    const std::string& service() const { return service_; }
    const std::string& item() const { return item_; }
    // Per-item sequence number. Across one subscription the sequence of
    // delivered refreshes and updates never goes back and never repeats, also
    // across a failover; a refresh may jump ahead (the image covers the gap).
    uint64_t sequence() const { return sequence_; }
    // kUpdate: the publisher's CLOCK_REALTIME stamp in ns; 0 when not stamped.
    uint64_t publish_time_ns() const { return publish_time_ns_; }
    // CLOCK_REALTIME in ns (microsecond resolution) when the I/O thread woke
    // up to read the message.
    uint64_t receive_time_ns() const { return receive_time_ns_; }
    // kRefresh answering snapshot(): nothing follows on this handle.
    bool snapshot() const { return snapshot_; }
    // kUpdate: several updates merged by the server for a slow consumer.
    bool conflated() const { return conflated_; }
    // kRefresh and kStatus: the item's state. kUpdate: open/ok.
    const ItemState& state() const { return state_; }

    // kRefresh: the image (only the view's fields with a view); kUpdate: the
    // changed fields.
    std::span<const FieldValue> fields() const { return fields_; }
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

    // ---- kConnection ----
    const ConnectionEvent& connection() const { return connection_; }

    // ---- kDirectory ----
    std::span<const ServiceInfo> services() const { return services_; }

  private:
    friend class detail::EventWriter;

    EventType type_ = EventType::kStatus;
    ItemHandle handle_;
    std::string service_;
    std::string item_;
    uint64_t sequence_ = 0;
    uint64_t publish_time_ns_ = 0;
    uint64_t receive_time_ns_ = 0;
    bool snapshot_ = false;
    bool conflated_ = false;
    ItemState state_;
    std::vector<FieldValue> fields_;
    std::string text_;  // backing store of the fields' string values
    ConnectionEvent connection_;
    std::vector<ServiceInfo> services_;
    const Dictionary* dictionary_ = nullptr;
};

}  // namespace mdcast
