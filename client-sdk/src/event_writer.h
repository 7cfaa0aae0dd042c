// Fills the public Event from wire messages. The only code that writes Event's
// private members (it is Event's friend).
//
// An Event's storage is reused: vectors are cleared, never shrunk, and string
// field values are copied into one text buffer reserved up front, so filling
// an event allocates nothing once it has seen a message that large.
//
// Updates are not decoded here: the event keeps the update's encoded field
// list, and find() / decode_all() decode fields when the application asks
// (Event::field(), Event::fields()). With `borrow` the event points at the
// subscription's names and the received bytes instead of copying them: for a
// handler called at once, while both are alive; a queued event copies.
#pragma once

#include <cstdint>
#include <string>

#include "mdcast/event.h"
#include "proto/field_image.h"
#include "proto/update_codec.h"
#include "wire/common.pb.h"

namespace mdcast::detail {

class EventWriter {
  public:
    // The item part every item event shares.
    struct ItemRef {
        ItemHandle handle;
        const std::string& service;
        const std::string& item;
        const Dictionary* dictionary;
        bool borrow = false;  // names and bytes outlive the handler call: point, do not copy
    };

    // A refresh: `image` holds its fields (as received, or held and brought
    // up to date after a failover).
    static void refresh(Event& event, const ItemRef& ref, const proto::FieldImage& image,
                        uint64_t seq, const ItemState& state, bool snapshot, uint64_t receive_ns);
    // `update` from proto::decode_update_header (fields decoded on demand from
    // update.field_bytes) or, when update.fields is filled, as decoded.
    static void update(Event& event, const ItemRef& ref, const proto::UpdateView& update,
                       uint64_t receive_ns);
    static void status(Event& event, const ItemRef& ref, const ItemState& state,
                       uint64_t receive_ns);
    static void connection(Event& event, const ConnectionEvent& connection);
    static void directory(Event& event, const wire::v1::Directory& directory);

    // Event::field(id) of an update: the first field with the id, decoded now
    // (at most once per event); nullptr when absent.
    static const FieldValue* find(const Event& event, uint32_t id);
    // Event::fields() of an update: every field decoded into the event, once.
    static void decode_all(const Event& event);

  private:
    static void begin(Event& event, EventType type, const ItemRef* ref, uint64_t receive_ns);
    // Empties what an event's fields (decoded, found, their bytes and texts) hold.
    static void clear_fields(Event& event);
    static void set_map(Event& event, std::span<const uint8_t> bytes, bool borrow);
};

// Wire <-> public conversions, also used by the publisher.
ItemState to_item_state(const wire::v1::Status& status);
void to_wire_status(const ItemState& state, wire::v1::Status& out);
FieldKind to_public_kind(proto::FieldKind kind);
proto::FieldKind to_proto_kind(FieldKind kind);

}  // namespace mdcast::detail
