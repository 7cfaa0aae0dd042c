#include "event_writer.h"

#include "proto/book_image.h"

namespace mdcast::detail {

namespace wire = mdcast::wire::v1;

namespace {

// Copies a string value into the event's text buffer, which the caller has
// reserved for every string of the message (so earlier views stay valid).
std::string_view keep(std::string& text, std::string_view value) {
    const size_t offset = text.size();
    text.append(value);
    return std::string_view(text).substr(offset, value.size());
}

// Field lookups a lazy update holds before decoding everything instead: their
// storage is reserved once, so pointers already handed out stay valid.
constexpr size_t kFoundSlots = 8;

// A decoded field; its string value stays a view into the event's field bytes.
FieldValue to_public(const proto::FieldEntry& in) {
    return FieldValue{in.id, to_public_kind(in.kind), in.exponent, in.integer, in.real, in.text};
}

template <class Entry>
void from_entry(const Entry& in, FieldValue& out, std::string& text) {
    out.id = in.id;
    out.kind = to_public_kind(in.kind);
    out.integer = in.integer;
    out.exponent = in.exponent;
    out.real = in.real;
    if (in.kind == proto::FieldKind::kString) out.text = keep(text, in.text);
}

}  // namespace

FieldKind to_public_kind(proto::FieldKind kind) {
    switch (kind) {
        case proto::FieldKind::kInt:
            return FieldKind::kInt;
        case proto::FieldKind::kDecimal:
            return FieldKind::kDecimal;
        case proto::FieldKind::kDouble:
            return FieldKind::kDouble;
        case proto::FieldKind::kString:
            return FieldKind::kString;
        case proto::FieldKind::kTime:
            return FieldKind::kTime;
        default:
            return FieldKind::kBlank;
    }
}

proto::FieldKind to_proto_kind(FieldKind kind) {
    switch (kind) {
        case FieldKind::kInt:
            return proto::FieldKind::kInt;
        case FieldKind::kDecimal:
            return proto::FieldKind::kDecimal;
        case FieldKind::kDouble:
            return proto::FieldKind::kDouble;
        case FieldKind::kString:
            return proto::FieldKind::kString;
        case FieldKind::kTime:
            return proto::FieldKind::kTime;
        case FieldKind::kBlank:
            return proto::FieldKind::kBlank;
    }
    return proto::FieldKind::kBlank;
}

ItemState to_item_state(const wire::Status& status) {
    ItemState state;
    state.stream =
        status.stream_state() == wire::STREAM_CLOSED ? StreamState::kClosed : StreamState::kOpen;
    state.data = status.data_state() == wire::DATA_SUSPECT ? DataState::kSuspect : DataState::kOk;
    state.code = static_cast<StatusCode>(status.code());
    state.text = status.text();
    return state;
}

void to_wire_status(const ItemState& state, wire::Status& out) {
    out.set_stream_state(state.stream == StreamState::kClosed ? wire::STREAM_CLOSED
                                                              : wire::STREAM_OPEN);
    out.set_data_state(state.data == DataState::kSuspect ? wire::DATA_SUSPECT : wire::DATA_OK);
    // SDK-only codes (100+) never go on the wire.
    const auto code = static_cast<uint16_t>(state.code);
    out.set_code(code < 100 && wire::StatusCode_IsValid(code) ? static_cast<wire::StatusCode>(code)
                                                              : wire::STATUS_NONE);
    out.set_text(state.text);
}

void EventWriter::begin(Event& event, EventType type, const ItemRef* ref, uint64_t receive_ns) {
    event.type_ = type;
    event.handle_ = ref ? ref->handle : ItemHandle{};
    if (ref && ref->borrow) {
        event.service_ref_ = &ref->service;
        event.item_ref_ = &ref->item;
    } else {
        event.service_.assign(ref ? ref->service : std::string());
        event.item_.assign(ref ? ref->item : std::string());
        event.service_ref_ = &event.service_;
        event.item_ref_ = &event.item_;
    }
    event.dictionary_ = ref ? ref->dictionary : nullptr;
    event.sequence_ = 0;
    event.publish_time_ns_ = 0;
    event.receive_time_ns_ = receive_ns;
    event.snapshot_ = false;
    event.conflated_ = false;
    event.trade_ = false;
    event.stands_for_ = 0;
    event.first_publish_time_ns_ = 0;
    event.state_.stream = StreamState::kOpen;
    event.state_.data = DataState::kOk;
    event.state_.code = StatusCode::kNone;
    event.state_.text.clear();
    clear_fields(event);
}

void EventWriter::clear_fields(Event& event) {
    event.fields_.clear();
    event.found_.clear();
    event.all_decoded_ = true;
    event.field_bytes_ = {};
    event.text_.clear();
    event.domain_ = Domain::kMarketPrice;
    event.map_bytes_ = {};
}

// A book's entries: the image's written out as a Map (a refresh), or the
// update's own bytes, pointed at (`borrow`) or copied.
void EventWriter::set_map(Event& event, std::span<const uint8_t> bytes, bool borrow) {
    if (borrow) {
        event.map_bytes_ = bytes;
        return;
    }
    event.map_copy_.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    event.map_bytes_ =
        std::span(reinterpret_cast<const uint8_t*>(event.map_copy_.data()), event.map_copy_.size());
}

void EventWriter::refresh(Event& event, const ItemRef& ref, const proto::FieldImage& image,
                          uint64_t seq, const ItemState& state, bool snapshot,
                          uint64_t receive_ns) {
    begin(event, EventType::kRefresh, &ref, receive_ns);
    event.sequence_ = seq;
    event.snapshot_ = snapshot;
    event.state_ = state;
    size_t text_bytes = 0;
    for (const auto& slot : image.slots()) text_bytes += slot.text.size();
    event.text_.reserve(text_bytes);
    event.fields_.resize(image.size());
    for (size_t i = 0; i < image.size(); ++i) {
        event.fields_[i] = FieldValue{};
        from_entry(image.slots()[i], event.fields_[i], event.text_);
    }
    if (const proto::BookImage* book = image.book()) {
        event.domain_ = static_cast<Domain>(book->domain());
        event.map_copy_.clear();
        book->to_map(event.map_copy_);
        set_map(event,
                {reinterpret_cast<const uint8_t*>(event.map_copy_.data()), event.map_copy_.size()},
                true);
    }
}

// An event that last held an update (the usual case: one event per sink,
// updates in a row) keeps what begin() would reset and an update never
// changes: its state (open, ok), snapshot_ and the connection and directory
// parts. Only what an update writes, and what reading its fields fills in, is
// reset here: the per-update path of every consumer.
void EventWriter::update(Event& event, const ItemRef& ref, const proto::UpdateView& update,
                         uint64_t receive_ns) {
    if (event.type_ == EventType::kUpdate && ref.borrow) {
        event.handle_ = ref.handle;
        event.service_ref_ = &ref.service;
        event.item_ref_ = &ref.item;
        event.dictionary_ = ref.dictionary;
        event.receive_time_ns_ = receive_ns;
        clear_fields(event);
    } else {
        begin(event, EventType::kUpdate, &ref, receive_ns);
    }
    event.sequence_ = update.item_seq;
    event.publish_time_ns_ = update.publish_time_ns;
    event.conflated_ = update.conflated;
    event.trade_ = update.trade;
    event.stands_for_ = update.stands_for;
    event.first_publish_time_ns_ = update.first_publish_time_ns;
    if (!update.map_bytes.empty()) set_map(event, update.map_bytes, ref.borrow);
    if (update.fields.empty()) {
        if (ref.borrow) {
            event.field_bytes_ = update.field_bytes;
        } else {
            event.field_copy_.assign(reinterpret_cast<const char*>(update.field_bytes.data()),
                                     update.field_bytes.size());
            event.field_bytes_ =
                std::span(reinterpret_cast<const uint8_t*>(event.field_copy_.data()),
                          event.field_copy_.size());
        }
        event.all_decoded_ = event.field_bytes_.empty();
        return;
    }
    size_t text_bytes = 0;
    for (const auto& field : update.fields) text_bytes += field.text.size();
    event.text_.reserve(text_bytes);
    event.fields_.resize(update.fields.size());
    for (size_t i = 0; i < update.fields.size(); ++i) {
        event.fields_[i] = FieldValue{};
        from_entry(update.fields[i], event.fields_[i], event.text_);
    }
}

const FieldValue* EventWriter::find(const Event& event, uint32_t id) {
    if (!event.all_decoded_) {
        for (const FieldValue& value : event.found_) {
            if (value.id == id) return &value;
        }
        if (event.found_.size() < kFoundSlots) {
            if (event.found_.capacity() < kFoundSlots) event.found_.reserve(kFoundSlots);
            proto::FieldEntry entry;
            proto::FieldListCursor cursor(event.field_bytes_);
            if (cursor.find(id, entry) != proto::FieldListCursor::Step::kField) return nullptr;
            event.found_.push_back(to_public(entry));
            return &event.found_.back();
        }
        decode_all(event);
    }
    for (const FieldValue& value : event.fields_) {
        if (value.id == id) return &value;
    }
    return nullptr;
}

void EventWriter::decode_all(const Event& event) {
    if (event.all_decoded_) return;
    event.all_decoded_ = true;
    event.fields_.clear();
    proto::FieldListCursor cursor(event.field_bytes_);
    proto::FieldEntry entry;
    while (cursor.next(entry) == proto::FieldListCursor::Step::kField) {
        event.fields_.push_back(to_public(entry));
    }
}

void EventWriter::status(Event& event, const ItemRef& ref, const ItemState& state,
                         uint64_t receive_ns) {
    begin(event, EventType::kStatus, &ref, receive_ns);
    event.state_ = state;
}

void EventWriter::connection(Event& event, const ConnectionEvent& connection) {
    begin(event, EventType::kConnection, nullptr, 0);
    event.connection_ = connection;
}

void EventWriter::directory(Event& event, const wire::Directory& directory) {
    begin(event, EventType::kDirectory, nullptr, 0);
    event.services_.clear();
    for (const auto& info : directory.services()) {
        ServiceInfo& out = event.services_.emplace_back();
        out.id = info.service_id();
        out.name = info.name();
        out.up = info.state() == wire::SERVICE_UP;
        out.mode = info.mode() == wire::SERVICE_INTERACTIVE ? ServiceMode::kInteractive
                                                            : ServiceMode::kBroadcast;
        out.item_count = info.item_count();
        out.group_members = info.group_members();
        out.group_active = info.group_active();
    }
}

}  // namespace mdcast::detail
