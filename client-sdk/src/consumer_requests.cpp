// What the consumer asks of a server (docs/sdk.md, "A complete consumer"):
// subscriptions, grouped and split to fit the server's limits, unsubscribes
// and the directory.
#include <map>

#include "consumer_core.h"
#include "proto/subscribe_split.h"

namespace mdcast::sdk {

using proto::FrameType;
namespace wire = mdcast::wire::v1;

namespace {

constexpr uint32_t kDefaultItemsPerRequest = 1000;

}  // namespace

void ConsumerCore::subscribe(const SubscribeRequest& request) {
    if (stopped_) return;
    std::vector<Item*> added;
    for (size_t i = 0; i < request.items.size(); ++i) {
        auto item = std::make_unique<Item>();
        item->handle = request.handles[i];
        item->service = request.service;
        item->name = request.items[i];
        item->key = item_key(item->service, item->name);
        item->snapshot = request.snapshot;
        item->view = request.view;
        item->conflate_ms = request.conflate_ms;
        Names& names = by_name_[item->key];
        if (item->snapshot) {
            names.snapshots.push_back(item.get());
        } else {
            names.streaming = item.get();
        }
        added.push_back(item.get());
        items_[item->handle.id] = std::move(item);
    }
    if (session_up_) send_subscribe(added);
}

// One Subscribe per (service, snapshot, conflate_ms, view), split to fit the
// server's max_items_per_request and max_frame_bytes. An item whose request
// cannot fit even alone is closed here (INVALID_REQUEST), never sent: the
// server would close the connection, and the request would be re-sent after
// every reconnect.
void ConsumerCore::send_subscribe(const std::vector<Item*>& items) {
    std::map<std::string, std::vector<Item*>> groups;
    for (Item* item : items) {
        std::string group = item->service;
        group.push_back(item->snapshot ? '\1' : '\0');
        group.append(std::to_string(item->conflate_ms)).push_back(';');
        for (uint32_t id : item->view) group.append(std::to_string(id)).push_back(',');
        groups[group].push_back(item);
    }
    const proto::RequestLimits limits = proto::request_limits(
        link_.max_items_per_request(), link_.peer_max_frame_bytes(), kDefaultItemsPerRequest);
    std::vector<Item*> refused;
    for (const auto& [group, members] : groups) {
        wire::Subscribe head;
        head.set_service_name(members.front()->service);
        head.set_snapshot(members.front()->snapshot);
        head.set_conflate_ms(members.front()->conflate_ms);
        for (uint32_t id : members.front()->view) head.add_view_field_ids(id);
        std::vector<std::string_view> names;
        names.reserve(members.size());
        for (const Item* item : members) names.push_back(item->name);
        const proto::SubscribeSplit split = proto::split_subscribe(head, names, limits);
        for (const wire::Subscribe& request : split.requests) {
            link_.send(FrameType::kSubscribe, request);
        }
        for (size_t index : split.too_large) refused.push_back(members[index]);
    }
    for (Item* item : refused) refuse_unsendable(*item, limits.max_body_bytes);
}

void ConsumerCore::refuse_unsendable(Item& item, size_t max_body_bytes) {
    const ItemState state{StreamState::kClosed, DataState::kSuspect, StatusCode::kInvalidRequest,
                          "the request for this item (" + std::to_string(item.name.size()) +
                              "-byte name) does not fit the server's frame limit of " +
                              std::to_string(max_body_bytes) + " bytes; not sent"};
    log_->warn("{}/{}: {}", log::escaped(item.service), log::escaped(item.name), state.text);
    apply_status(item, state);
}

void ConsumerCore::unsubscribe(ItemHandle handle) {
    const auto it = items_.find(handle.id);
    if (it == items_.end()) return finished_(handle);  // finished already: clean up the caller
    Item& item = *it->second;
    // A later subscribe of the same item (from another thread) may have taken
    // over the server's subscription: then it stays.
    const auto names = by_name_.find(item.key);
    const bool taken_over = names != by_name_.end() && names->second.streaming != &item;
    if (!item.snapshot && item.item_id != 0 && session_up_ && !taken_over) {
        wire::Unsubscribe request;
        request.add_item_ids(item.item_id);
        link_.send(FrameType::kUnsubscribe, request);
    }
    // Not bound yet: the server's refresh will find no owner and be refused then.
    finish(item);
}

void ConsumerCore::request_directory() {
    directory_wanted_ = true;
    if (!session_up_) return;
    directory_wanted_ = false;
    link_.send(FrameType::kDirectoryRequest, wire::DirectoryRequest());
}

}  // namespace mdcast::sdk
