#include "tools/replay/replay_items.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "proto/backbone_packet.h"
#include "proto/frame.h"
#include "wire/common.pb.h"

namespace mdcast::tools {
namespace {

// The largest message put back together from parts: above any distributor's
// backbone.max_message_bytes, and a bound on what a hostile capture costs.
constexpr size_t kMaxAssembledBytes = 16 << 20;

ItemState to_state(const wire::v1::Status& status) {
    ItemState state;
    state.stream = status.stream_state() == wire::v1::STREAM_CLOSED ? StreamState::kClosed
                                                                    : StreamState::kOpen;
    state.data =
        status.data_state() == wire::v1::DATA_SUSPECT ? DataState::kSuspect : DataState::kOk;
    state.code = static_cast<StatusCode>(status.code());
    state.text = status.text();
    return state;
}

// Statuses a distributor or server makes, not a publisher.
bool from_infrastructure(wire::v1::StatusCode code) {
    switch (code) {
        case wire::v1::STATUS_SOURCE_DOWN:
        case wire::v1::STATUS_UNRECOVERABLE_LOSS:
        case wire::v1::STATUS_SOURCE_RESET:
        case wire::v1::STATUS_SERVER_SHUTDOWN:
        case wire::v1::STATUS_RECOVERING:
        case wire::v1::STATUS_UNCHANGED:
        case wire::v1::STATUS_NOT_FOUND:
        case wire::v1::STATUS_LIMIT_REACHED:
            return true;
        default:
            return false;
    }
}

void add_field(const proto::FieldEntry& entry, FieldList& out) {
    switch (entry.kind) {
        case proto::FieldKind::kInt:
            out.add_int(entry.id, entry.integer);
            break;
        case proto::FieldKind::kDecimal:
            out.add_decimal(entry.id, entry.integer, entry.exponent);
            break;
        case proto::FieldKind::kDouble:
            out.add_double(entry.id, entry.real);
            break;
        case proto::FieldKind::kString:
            out.add_string(entry.id, entry.text);
            break;
        case proto::FieldKind::kTime:
            out.add_time(entry.id, entry.integer);
            break;
        case proto::FieldKind::kBlank:
        case proto::FieldKind::kNone:
            out.add_blank(entry.id);
            break;
    }
}

template <class Message>
bool parse(std::span<const uint8_t> body, Message& out) {
    return out.ParseFromArray(body.data(), static_cast<int>(body.size()));
}

}  // namespace

void to_field_list(std::span<const uint8_t> field_list_bytes, FieldList& out, bool& ok) {
    out.clear();
    proto::FieldListCursor cursor(field_list_bytes);
    proto::FieldEntry entry;
    for (;;) {
        const auto step = cursor.next(entry);
        if (step == proto::FieldListCursor::Step::kEnd) break;
        if (step == proto::FieldListCursor::Step::kMalformed) {
            ok = false;
            return;
        }
        add_field(entry, out);
    }
    ok = true;
}

ReplayItems::ReplayItems(Publisher& publisher, std::string service, const std::atomic<bool>& stop)
    : publisher_(publisher), service_(std::move(service)), stop_(stop) {}

template <class Call>
bool ReplayItems::until_taken(Call call) {
    try {
        while (!call()) {
            if (stop_) return false;
            ++counts_.outbox_waits;
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    } catch (const std::invalid_argument&) {
        // The SDK refused the message itself (over the distributor's frame
        // limit, text not UTF-8; it logged why): the replay goes on without it.
        ++counts_.refused;
    }
    return true;
}

template <class Call>
bool ReplayItems::each_message(uint64_t epoch, std::span<const uint8_t> datagram,
                               std::map<uint64_t, proto::MessageAssembler>& assemblers, Call call) {
    proto::PacketHeader header;
    if (proto::decode_packet_header(datagram, header) != proto::PacketError::kNone) return true;
    proto::PacketMessageIterator messages(datagram, header, proto::kBackboneDataTypes);
    proto::Frame frame;
    auto& parts = assemblers.try_emplace(epoch, kMaxAssembledBytes).first->second;
    while (messages.next(frame) == proto::PacketMessageIterator::Result::kFrame) {
        if (frame.type != proto::FrameType::kMessagePart) {
            if (parts.abandon()) ++counts_.parts_refused;
            if (!call(frame)) return false;
            continue;
        }
        std::string why;
        const auto result = parts.add(frame.body, why);
        if (result == proto::MessageAssembler::Result::kRefused) ++counts_.parts_refused;
        if (result != proto::MessageAssembler::Result::kComplete) continue;
        const auto whole = parts.whole();
        if (whole.size() < proto::kFrameHeaderBytes) {
            ++counts_.parts_refused;
            continue;
        }
        const auto head = proto::decode_frame_header(whole.data());
        const auto body = whole.subspan(proto::kFrameHeaderBytes);
        const proto::Frame assembled{static_cast<proto::FrameType>(head.type),
                                     body.first(std::min<size_t>(head.body_bytes, body.size())),
                                     whole};
        if (!call(assembled)) return false;
    }
    return true;
}

bool ReplayItems::publish_datagram(uint64_t epoch, std::span<const uint8_t> datagram) {
    return each_message(epoch, datagram, assemblers_,
                        [&](const proto::Frame& frame) { return publish(epoch, frame); });
}

bool ReplayItems::publish(uint64_t epoch, const proto::Frame& frame) {
    switch (frame.type) {
        case proto::FrameType::kRefresh:
            return publish_refresh(epoch, frame.body);
        case proto::FrameType::kUpdate:
            return publish_update(epoch, frame.body);
        case proto::FrameType::kItemStatus:
            return publish_status(epoch, frame.body);
        default:
            ++counts_.other;
            return true;
    }
}

bool ReplayItems::publish_refresh(uint64_t epoch, std::span<const uint8_t> body) {
    wire::v1::Refresh refresh;
    if (!parse(body, refresh) || refresh.item_name().empty()) {
        ++counts_.malformed;
        return true;
    }
    const auto key = std::make_pair(epoch, refresh.item_id());
    auto found = items_.find(key);
    if (published_early_.erase(key) > 0) return true;  // already out, first of all
    if (found != items_.end() && refresh.solicited()) {
        ++counts_.solicited_refreshes;
        return true;
    }
    if (found == items_.end()) {
        const std::string& service = service_.empty() ? refresh.service_name() : service_;
        found = items_.emplace(key, publisher_.add_item(service, refresh.item_name())).first;
    }
    const std::string fields = refresh.fields().SerializeAsString();
    bool ok = false;
    to_field_list({reinterpret_cast<const uint8_t*>(fields.data()), fields.size()}, fields_, ok);
    if (!ok) {
        ++counts_.malformed;
        return true;
    }
    const ItemState state = to_state(refresh.status());
    if (proto::is_book_domain(refresh.domain())) return publish_book_refresh(key, refresh, state);
    ++counts_.refreshes;
    return until_taken([&] { return publisher_.refresh(found->second, fields_, state); });
}

bool ReplayItems::publish_book_refresh(std::pair<uint64_t, uint64_t> key,
                                       const wire::v1::Refresh& refresh, const ItemState& state) {
    std::string why;
    const auto& map = refresh.map();
    if (!book_replayer_.to_changes(refresh.domain(),
                                   {reinterpret_cast<const uint8_t*>(map.data()), map.size()},
                                   changes_, why)) {
        ++counts_.malformed;
        return true;
    }
    books_[key] = refresh.domain();
    ++counts_.refreshes;
    ++counts_.book_refreshes;
    const auto domain = static_cast<Domain>(refresh.domain());
    return until_taken(
        [&] { return publisher_.refresh_book(items_.at(key), domain, fields_, changes_, state); });
}

bool ReplayItems::publish_update(uint64_t epoch, std::span<const uint8_t> body) {
    if (!proto::decode_update_header(body, update_)) {
        ++counts_.malformed;
        return true;
    }
    const auto found = items_.find({epoch, update_.item_id});
    if (found == items_.end()) {
        ++counts_.updates_without_image;
        return true;
    }
    bool ok = false;
    to_field_list(update_.field_bytes, fields_, ok);
    if (!ok) {
        ++counts_.malformed;
        return true;
    }
    const uint64_t stamp = update_.publish_time_ns != 0 ? Publisher::kStampNow : 0;
    if (!update_.map_bytes.empty()) return publish_book_update(found->first, found->second, stamp);
    if (stamp != 0) ++counts_.stamped;
    ++counts_.updates;
    return until_taken([&] { return publisher_.update(found->second, fields_, stamp); });
}

bool ReplayItems::publish_book_update(std::pair<uint64_t, uint64_t> key, PublishedItem item,
                                      uint64_t stamp) {
    const auto book = books_.find(key);
    std::string why;
    if (book == books_.end() ||
        !book_replayer_.to_changes(book->second, update_.map_bytes, changes_, why)) {
        ++counts_.malformed;  // a map on an item that is not a book, or one that does not decode
        return true;
    }
    if (stamp != 0) ++counts_.stamped;
    ++counts_.updates;
    ++counts_.book_updates;
    return until_taken([&] { return publisher_.update_book(item, fields_, changes_, stamp); });
}

bool ReplayItems::publish_status(uint64_t epoch, std::span<const uint8_t> body) {
    wire::v1::ItemStatus status;
    if (!parse(body, status)) {
        ++counts_.malformed;
        return true;
    }
    const auto found = items_.find({epoch, status.item_id()});
    if (found == items_.end() || from_infrastructure(status.status().code())) {
        ++counts_.infrastructure_statuses;
        return true;
    }
    const ItemState state = to_state(status.status());
    ++counts_.statuses;
    return until_taken([&] { return publisher_.status(found->second, state); });
}

bool ReplayItems::publish_images(uint64_t epoch, std::span<const uint8_t> datagram) {
    wire::v1::Refresh refresh;
    return each_message(epoch, datagram, image_assemblers_, [&](const proto::Frame& frame) {
        if (frame.type != proto::FrameType::kRefresh || !parse(frame.body, refresh)) return true;
        const auto key = std::make_pair(epoch, refresh.item_id());
        if (items_.count(key) > 0) return true;
        if (!publish_refresh(epoch, frame.body)) return false;
        if (items_.count(key) > 0) published_early_.insert(key);
        return true;
    });
}

void ReplayItems::services_of(std::span<const uint8_t> datagram, std::set<std::string>& out) {
    proto::PacketHeader header;
    if (proto::decode_packet_header(datagram, header) != proto::PacketError::kNone) return;
    proto::PacketMessageIterator messages(datagram, header, proto::kBackboneDataTypes);
    proto::Frame frame;
    while (messages.next(frame) == proto::PacketMessageIterator::Result::kFrame) {
        wire::v1::Refresh refresh;
        if (frame.type == proto::FrameType::kRefresh && parse(frame.body, refresh) &&
            !refresh.service_name().empty()) {
            out.insert(refresh.service_name());
        }
    }
}

}  // namespace mdcast::tools
