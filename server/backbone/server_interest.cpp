// Interest in items of interactive services (server/backbone/interest_reporter.h): the
// server decides which items count and when their last subscriber here left.
#include "server/server.h"

namespace mdcast::server {

// An item of a service the directory lists as interactive (sink-driven).
bool Server::interactive(uint64_t item_id) const {
    const CachedItem* item = cache_.find(item_id);
    if (!item) return false;
    if (upstream_->interest_based()) return true;
    const auto& directory = recovery_.directory();
    const auto service = directory.find(item->service_id);
    return service != directory.end() && service->second.mode() == wire::SERVICE_INTERACTIVE;
}

// An item of an interactive service that nobody here subscribes to while its
// service is up: released upstream on purpose, so not current, yet nobody sees it
// stale and the next subscriber gets a fresh image (items_suspect leaves it out).
bool Server::released_on_purpose(const CachedItem& item) const {
    const auto& directory = recovery_.directory();
    const auto service = directory.find(item.service_id);
    return service != directory.end() &&
           (service->second.mode() == wire::SERVICE_INTERACTIVE || upstream_->interest_based()) &&
           service->second.state() == wire::SERVICE_UP && !fanout_.has_subscribers(item.id);
}

size_t Server::count_not_current(bool released) {
    size_t count = 0;
    cache_.for_each([&](CachedItem& item) {
        count += item.status.data_state() != wire::DATA_OK && released_on_purpose(item) == released;
    });
    return count;
}

void Server::hold_if_interactive(uint64_t item_id) {
    if (interactive(item_id)) interest_.hold(item_id);
}

// A redundancy follower's subscribers watch the item feeding it too.
void Server::release_if_unwatched(uint64_t item_id) {
    if (fanout_.has_subscribers(item_id)) return;
    const CachedItem* item = cache_.find(item_id);
    if (item && item->feeds && fanout_.has_subscribers(item->feeds->id)) return;
    if (interactive(item_id)) interest_.release(item_id);
    if (item && item->fed_by && interactive(item->fed_by->id) &&
        !fanout_.has_subscribers(item->fed_by->id))
        interest_.release(item->fed_by->id);
}

// The client is going: what it alone held is released.
void Server::release_items_of(ClientSession& client) {
    std::vector<uint64_t> items;
    if (const Fanout::Views* held = fanout_.subscriptions_of(client)) {
        for (const auto& [item_id, view] : *held) items.push_back(item_id);
    }
    fanout_.drop_client(client);
    for (uint64_t item_id : items) release_if_unwatched(item_id);
}

std::vector<uint64_t> Server::held_interactive_items() const {
    std::vector<uint64_t> held;
    for (uint64_t item_id : fanout_.subscribed_items()) {
        if (interactive(item_id)) held.push_back(item_id);
        const CachedItem* item = cache_.find(item_id);
        if (item && item->fed_by && interactive(item->fed_by->id)) held.push_back(item->fed_by->id);
    }
    return held;
}

// Housekeeping: holds and releases go out at once (an item subscribed again
// meanwhile is not released), and every proto::kInterestRenewMs the held
// items are renewed.
void Server::report_interest(int64_t now) {
    if (interest_.renewal_due(now)) interest_.renew(held_interactive_items());
    interest_.flush([this](uint64_t item_id) { return fanout_.has_subscribers(item_id); });
}

}  // namespace mdcast::server
