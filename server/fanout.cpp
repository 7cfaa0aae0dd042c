#include "server/fanout.h"

#include <algorithm>

#include "common/clock.h"
#include "proto/book_image.h"
#include "server/make_status.h"

namespace mdcast::server {

using proto::FrameType;

namespace {

std::span<const uint8_t> bytes_of(const std::string& frame) {
    return {reinterpret_cast<const uint8_t*>(frame.data()), frame.size()};
}

}  // namespace

Fanout::Fanout(ItemCache& cache, EventLoop& loop)
    : cache_(cache), paced_timer_(loop, [this] {
          paced_timer_due_ns_ = 0;
          send_paced(monotonic_ns());
      }) {}

// ---- the subscription book -----------------------------------------------------------------

bool Fanout::subscribe(ClientSession& client, uint64_t item_id, const std::vector<uint32_t>& view,
                       uint32_t conflate_ms) {
    const bool json = client.json() != nullptr;
    CachedItem* item = cache_.find(item_id);
    if (json && item) client.bind_json_stream(item->service_name, item->name, item_id);
    if (!by_item_.add(item_id, &client, view, json, conflate_ms))
        return false;  // already open: re-image only
    if (item) item->subscribed_hint = true;
    by_client_[&client][item_id] = view;
    return true;
}

bool Fanout::unsubscribe(ClientSession& client, uint64_t item_id) {
    if (!by_item_.remove(item_id, &client)) return false;
    const auto it = by_client_.find(&client);
    it->second.erase(item_id);
    if (it->second.empty()) by_client_.erase(it);
    return true;
}

std::vector<Fanout::Subscriber> Fanout::take_item(uint64_t item_id) {
    if (CachedItem* item = cache_.find(item_id)) item->subscribed_hint = false;
    std::vector<Subscriber> taken;
    for (auto& group : by_item_.take(item_id)) {
        for (ClientSession* client : group.clients) {
            const auto it = by_client_.find(client);
            it->second.erase(item_id);
            if (it->second.empty()) by_client_.erase(it);
            taken.push_back(Subscriber{client, group.view, group.pace.interval_ms});
        }
    }
    return taken;
}

void Fanout::drop_client(ClientSession& client) {
    const auto it = by_client_.find(&client);
    if (it == by_client_.end()) return;
    for (const auto& [item_id, view] : it->second) by_item_.remove(item_id, &client);
    by_client_.erase(it);
}

size_t Fanout::subscription_count(const ClientSession& client) const {
    const Views* views = subscriptions_of(client);
    return views ? views->size() : 0;
}

const Fanout::Views* Fanout::subscriptions_of(const ClientSession& client) const {
    const auto it = by_client_.find(&client);
    return it == by_client_.end() ? nullptr : &it->second;
}

// ---- frames --------------------------------------------------------------------------------

// The item's image as a Refresh frame (only `view`'s fields when set).
std::string Fanout::image_frame(const CachedItem& item, const proto::FieldImage* image,
                                const std::vector<uint32_t>& view, bool solicited, bool snapshot) {
    wire::Refresh refresh;
    refresh.set_item_id(item.id);
    refresh.set_item_seq(item.item_seq);
    refresh.set_clear_cache(true);
    refresh.set_solicited(solicited);
    refresh.set_service_id(item.service_id);
    refresh.set_service_name(item.service_name);
    refresh.set_item_name(item.name);
    *refresh.mutable_status() = item.status;
    // A snapshot is one image and then the stream is finished.
    if (snapshot) refresh.mutable_status()->set_stream_state(wire::STREAM_CLOSED);
    if (image) {  // a view selects the summary's fields and each entry's
        const std::vector<uint32_t>* in_view = view.empty() ? nullptr : &view;
        image->to_field_list(*refresh.mutable_fields(), in_view);
        proto::book_into_refresh(*image, refresh, in_view);
    }
    return proto::encode_frame_string(FrameType::kRefresh, refresh);
}

std::string Fanout::status_frame(const CachedItem& item) {
    wire::ItemStatus status;
    status.set_item_id(item.id);
    status.set_service_id(item.service_id);
    status.set_service_name(item.service_name);
    status.set_item_name(item.name);
    *status.mutable_status() = item.status;
    return proto::encode_frame_string(FrameType::kItemStatus, status);
}

// One update carrying the item's current values (from the cache), marked
// conflated: what a slow consumer gets instead of the updates it could not take.
proto::UpdateView Fanout::conflated_update(const CachedItem& item) {
    proto::UpdateView update;
    update.item_id = item.id;
    update.item_seq = item.item_seq;
    update.conflated = true;
    for (const auto& slot : item.image.slots()) update.fields.push_back(slot.entry());
    return update;
}

// ---- sending -------------------------------------------------------------------------------

std::string Fanout::image_frame_for(const ClientSession& client, const CachedItem& item,
                                    const proto::FieldImage* image,
                                    const std::vector<uint32_t>& view, bool solicited,
                                    bool snapshot) {
    if (const JsonEncoder* json = client.json())
        return json->refresh(item, image, view, solicited, snapshot);
    return image_frame(item, image, view, solicited, snapshot);
}

std::string Fanout::status_frame_for(const ClientSession& client, const CachedItem& item) {
    if (const JsonEncoder* json = client.json())
        return json->status(item.service_name, item.name, item.id, item.status);
    return status_frame(item);
}

void Fanout::fan_out_update(const CachedItem& item, const proto::UpdateView& update,
                            std::span<const uint8_t> whole) {
    auto* groups = by_item_.find(item.id);
    if (!groups) return;
    int64_t now_ns = 0;  // read once, and only for conflated subscriptions
    for (auto& group : *groups) {
        std::span<const uint8_t> bytes = whole;
        // Updates touching none of a view's fields are skipped (a book's, below, once
        // filtered to the view).
        if (!group.view.empty() && update.map_bytes.empty() &&
            std::none_of(update.fields.begin(), update.fields.end(),
                         [&](const proto::FieldEntry& f) {
                             return std::binary_search(group.view.begin(), group.view.end(), f.id);
                         })) {
            continue;
        }
        if (group.paced() && hold_for_interval(item.id, group, update, now_ns)) continue;
        if (group.json) {  // one JSON encoding per view, for every WebSocket subscriber
            view_frame_.clear();
            group.clients.front()->json()->append_update(view_frame_, update, group.view);
            ++counters_.json_update_encodings;
            bytes = bytes_of(view_frame_);
        } else if (!group.view.empty()) {  // one encoding per distinct view
            view_frame_.clear();
            if (!proto::append_update_frame(view_frame_, update, &group.view)) continue;
            bytes = bytes_of(view_frame_);
        }
        deliver_update(item.id, group, update, bytes);
    }
}

// One copy for a group of several subscribers, which each queue it by
// reference; a lone subscriber's connection copies it, as before. Returns the
// clients it went to: not those whose image already had it.
size_t Fanout::deliver_update(uint64_t item_id, Group& group, const proto::UpdateView& update,
                              std::span<const uint8_t> frame) {
    const SharedFrame shared = group.clients.size() > 1 ? shared_.store(frame) : SharedFrame{};
    if (shared) ++counters_.shared_updates;
    size_t sent = 0;
    for (ClientSession* client : group.clients) {
        if (!group.imaged.empty() && group.image_covers(client, update.item_seq)) continue;
        if (shared) {
            client->deliver_update(item_id, update, shared);
        } else {
            client->deliver_update(item_id, update, frame);
        }
        ++sent;
    }
    counters_.updates_out += sent;
    return sent;
}

// A conflated subscription's update within its interval: merged, and the
// interval's end queued when this is the first thing owed.
bool Fanout::hold_for_interval(uint64_t item_id, Group& group, const proto::UpdateView& update,
                               int64_t& now_ns) {
    if (now_ns == 0) now_ns = monotonic_ns();
    const bool was_owed = group.pace.owed;
    switch (group.pace.admit(update, now_ns)) {
        case PacedSlot::Admit::kSend:
            return false;
        case PacedSlot::Admit::kAfterOwed:  // a trade: the quotes owed go first, in order
            send_paced_update(item_id, group, now_ns);
            ++counters_.paced_trades;
            return false;
        case PacedSlot::Admit::kHeld:
            break;
    }
    ++counters_.paced_held;
    if (!was_owed) {
        paced_.push(group.pace.quiet_from_ns, PacedKey{item_id, group.serial});
        arm_paced_timer();
    }
    return true;
}

void Fanout::send_paced_update(uint64_t item_id, Group& group, int64_t now_ns) {
    if (!group.pace.owed) return;
    const proto::UpdateView update = group.pace.owed_update(item_id);
    view_frame_.clear();
    if (const JsonEncoder* json = group.clients.front()->json()) {
        json->append_update(view_frame_, update, group.view);
        ++counters_.json_update_encodings;
    } else {
        proto::append_update_frame(view_frame_, update, group.view.empty() ? nullptr : &group.view);
    }
    counters_.paced_out += deliver_update(item_id, group, update, bytes_of(view_frame_));
    group.imaged.clear();
    group.pace.sent(now_ns);
}

// A member of a paced group was sent an image. Alone, the image replaces what
// is owed; shared, the others are still owed it, and this member gets it only
// if it is newer than the image (a sequence the image did not carry).
void Fanout::on_image_to(Group& group, const ClientSession& client, const CachedItem& item) {
    if (group.clients.size() == 1) return group.pace.on_image();
    if (group.pace.owed) group.imaged.emplace_back(&client, item.item_seq);
}

void Fanout::send_paced(int64_t now_ns) {
    paced_.pop_due(now_ns, [&](const PacedKey& key) {
        Group* group = by_item_.group_by_serial(key.item_id, key.group_serial);
        // An entry left behind by a trade's early flush is not due yet: a later one is queued.
        if (group && group->paced() && group->pace.quiet_from_ns <= now_ns)
            send_paced_update(key.item_id, *group, now_ns);
    });
    arm_paced_timer();
}

void Fanout::arm_paced_timer() {
    if (paced_.empty()) return;
    const int64_t due = paced_.next_due_ns();
    if (paced_timer_due_ns_ != 0 && paced_timer_due_ns_ <= due) return;  // fires soon enough
    paced_timer_due_ns_ = due;
    const int64_t delay_ns = std::max<int64_t>(0, due - monotonic_ns());
    paced_timer_.start_once(std::chrono::microseconds((delay_ns + 999) / 1000));
}

void Fanout::fan_out_image(const CachedItem& item, const proto::FieldImage* image) {
    auto* groups = by_item_.find(item.id);
    if (!groups) return;
    for (auto& group : *groups) {
        group.pace.on_image();
        group.imaged.clear();
        const std::string frame =
            image_frame_for(*group.clients.front(), item, image, group.view, false, false);
        for (ClientSession* client : group.clients) {
            client->deliver_item(item.id, ClientSession::Owed::kImage, bytes_of(frame));
        }
        counters_.refreshes_out += group.clients.size();
    }
}

// Statuses do not wait for a conflation interval: what is owed goes first.
void Fanout::flush_paced(uint64_t item_id, Group& group, int64_t& now_ns) {
    if (!group.pace.owed) return;
    if (now_ns == 0) now_ns = monotonic_ns();
    ++counters_.paced_flushed;
    send_paced_update(item_id, group, now_ns);
}

void Fanout::fan_out_status(const CachedItem& item) {
    fan_out_item_status(item, nullptr);
}

// `grouped` set: clients that take group statuses are noted there with the
// item instead of being sent its status.
void Fanout::fan_out_item_status(const CachedItem& item, GroupedClients* grouped) {
    auto* groups = by_item_.find(item.id);
    if (!groups) return;
    std::string frames[2];  // binary, JSON: each encoded once
    int64_t now_ns = 0;
    for (auto& group : *groups) {
        flush_paced(item.id, group, now_ns);
        std::string& frame = frames[group.json ? 1 : 0];
        for (ClientSession* client : group.clients) {
            if (grouped && client->takes_group_status()) {
                (*grouped)[client].push_back(item.id);
                continue;
            }
            if (frame.empty()) frame = status_frame_for(*client, item);
            client->deliver_item(item.id, ClientSession::Owed::kStatus, bytes_of(frame));
            if (group.json && item.status.stream_state() == wire::STREAM_CLOSED)
                client->json_stream_closed(item.id);
            ++counters_.statuses_out;
        }
    }
}

// Each client's frame is queued after the paced updates flushed for it above,
// and nothing else goes to it in between: it stays in order with the data.
void Fanout::fan_out_group_status(const wire::GroupStatus& message,
                                  const std::vector<const CachedItem*>& items) {
    GroupedClients grouped;
    for (const CachedItem* item : items) fan_out_item_status(*item, &grouped);
    wire::GroupStatus to_client = message;
    for (const auto& [client, item_ids] : grouped) {
        to_client.set_item_count(static_cast<uint32_t>(item_ids.size()));
        const std::string frame = proto::encode_frame_string(FrameType::kGroupStatus, to_client);
        client->deliver_group(bytes_of(frame), item_ids);
        ++counters_.group_statuses_out;
        counters_.group_status_items += item_ids.size();
    }
}

void Fanout::send_image(ClientSession& client, const CachedItem& item,
                        const proto::FieldImage* image, const std::vector<uint32_t>& view,
                        bool snapshot) {
    client.bind_json_stream(item.service_name, item.name, item.id);
    const std::string frame = image_frame_for(client, item, image, view, true, snapshot);
    if (snapshot) {
        client.deliver_snapshot(item.id, bytes_of(frame));  // not an open item: nothing to conflate
    } else {
        if (Group* group = by_item_.group_of(item.id, &client)) on_image_to(*group, client, item);
        client.deliver_item(item.id, ClientSession::Owed::kImage, bytes_of(frame));
    }
    ++counters_.refreshes_out;
}

void Fanout::send_unchanged(ClientSession& client, const CachedItem& item) {
    wire::ItemStatus message;
    message.set_item_id(item.id);
    message.set_service_id(item.service_id);
    message.set_item_seq(item.item_seq);
    *message.mutable_status() =
        make_status(wire::STREAM_OPEN, wire::DATA_OK, wire::STATUS_UNCHANGED,
                    "unchanged since sequence " + std::to_string(item.item_seq));
    const std::string frame = proto::encode_frame_string(FrameType::kItemStatus, message);
    client.deliver_item(item.id, ClientSession::Owed::kImage, bytes_of(frame));
    ++counters_.unchanged_out;
}

void Fanout::send_status(ClientSession& client, const std::string& service, const std::string& name,
                         uint64_t item_id, const wire::Status& status) {
    wire::ItemStatus message;
    message.set_item_id(item_id);
    message.set_service_name(service);
    message.set_item_name(name);
    *message.mutable_status() = status;
    client.deliver(FrameType::kItemStatus, message);
    ++counters_.statuses_out;
}

void Fanout::drain(ClientSession& client) {
    const Views* views = subscriptions_of(client);
    counters_.conflated_out += client.drain_owed(
        [&](uint64_t item_id, const ConflationBacklog::Piece& piece) -> std::optional<std::string> {
            const CachedItem* item = cache_.find(item_id);
            if (!item || !views || !views->contains(item_id)) {
                return std::nullopt;  // unsubscribed or gone meanwhile
            }
            return owed_frame(client, *item, piece, views->at(item_id));
        });
}

// A piece of the backlog: a held trade as it was, the quotes merged before it
// as one conflated update, or the item's current state.
std::string Fanout::owed_frame(const ClientSession& client, const CachedItem& item,
                               const ConflationBacklog::Piece& piece,
                               const std::vector<uint32_t>& view) {
    using Kind = ConflationBacklog::Piece::Kind;
    if (piece.kind == Kind::kTrade) {
        ++counters_.conflated_trades;
        return std::string(piece.trade_frame);
    }
    if (piece.kind == Kind::kQuotes)
        return update_frame_for(client, piece.quotes->to_update(item.id), view);
    return state_frame(client, item, piece.state, *piece.quotes, view);
}

// What a conflating client is sent for one item it is owed, so that it ends level
// with the cache: a suspect item still holding values (its source went down, or
// loss is being repaired) gets those values with the status naming why, since a
// status alone would leave it behind the cache and no image may follow for long;
// an item holding none, or closed, gets its status.
std::string Fanout::state_frame(const ClientSession& client, const CachedItem& item,
                                ClientSession::Owed owed, const MergedUpdate& quotes,
                                const std::vector<uint32_t>& view) {
    const bool closed = item.status.stream_state() == wire::STREAM_CLOSED;
    if (closed || (!item.has_image && item.image.empty())) return status_frame_for(client, item);
    if (!item.has_image || item.status.data_state() != wire::DATA_OK) {
        ++counters_.conflated_suspect_images;
        return image_frame_for(client, item, &item.image, view, false, false);
    }
    if (owed != ClientSession::Owed::kUpdate)
        return image_frame_for(client, item, &item.image, view, false, false);
    proto::UpdateView update = conflated_update(item);
    update.stands_for = quotes.stands_for;
    update.first_publish_time_ns = quotes.first_publish_time_ns;
    update.publish_time_ns = quotes.publish_time_ns;
    return update_frame_for(client, update, view);
}

std::string Fanout::update_frame_for(const ClientSession& client, const proto::UpdateView& update,
                                     const std::vector<uint32_t>& view) {
    std::string frame;
    if (const JsonEncoder* json = client.json()) {
        json->append_update(frame, update, view);
    } else {
        proto::append_update_frame(frame, update, view.empty() ? nullptr : &view);
    }
    return frame;
}

std::vector<uint64_t> Fanout::subscriber_ids(uint64_t item_id) const {
    std::vector<uint64_t> ids;
    if (const auto* groups = by_item_.find(item_id)) {
        for (const auto& group : *groups)
            for (const ClientSession* client : group.clients)
                ids.push_back(client->connection().id());
    }
    return ids;
}

}  // namespace mdcast::server
