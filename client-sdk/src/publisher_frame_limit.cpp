#include "publisher_frame_limit.h"

#include "guarded_call.h"
#include "publisher_core.h"

namespace mdcast::sdk {

namespace {
// Tag and widest varint of a 64-bit id or sequence.
constexpr size_t kIdBytes = 1 + 10;
// Tag and widest length of a message, string or bytes member (under 4 GiB).
constexpr size_t kLengthBytes = 1 + 5;
// A Status without its text: stream and data state, a code.
constexpr size_t kStatusBytes = kLengthBytes + 2 + 2 + 1 + 3;
// Refresh: id, sequence, clear_cache, solicited, domain, the status, and the
// field list's and the map's tags and lengths.
constexpr size_t kRefreshBytes = 2 * kIdBytes + 2 + 2 + 2 + kStatusBytes + 3 * kLengthBytes;
}  // namespace

size_t refresh_body_bound(std::span<const proto::FieldEntry> fields, size_t text_bytes,
                          size_t map_bytes) {
    return kRefreshBytes + proto::field_values_bytes(fields) + text_bytes + map_bytes;
}

size_t update_body_bound(size_t rest_bytes) {
    return 2 * kIdBytes + rest_bytes;
}

size_t status_body_bound(size_t text_bytes) {
    return kIdBytes + kStatusBytes + kLengthBytes + text_bytes;
}

std::string frame_over_limit(std::string_view what, size_t bytes, uint32_t limit) {
    return std::string(what) + " of " + std::to_string(bytes) +
           " bytes is over the distributor's frame limit of " + std::to_string(limit) +
           " bytes (publishers.max_frame_bytes)";
}

// ---- PublisherCore: what passed the limit on the I/O thread ----------------------------------

// What the I/O thread would send for an item passed the distributor's frame
// limit (its image grew over it, or this distributor's limit is lower than
// the one the call was checked against): sending it would close the
// connection frame_too_large, and the image would go again after every
// reconnect. Only this item is dropped: closed at the distributor (now if it
// can be told, else after the item's next registration), its image and held
// updates forgotten, the application told. refresh() brings it back.
void PublisherCore::drop_oversize(Item& item, const std::string& why) {
    counters_.images_dropped.fetch_add(1, std::memory_order_relaxed);
    log_->error("item {}/{} dropped: {}; it is closed until a refresh within the limit",
                item.service->name, item.name, why);
    const ItemState closed{StreamState::kClosed, DataState::kSuspect, StatusCode::kLimitReached,
                           why};
    for (const std::string& body : item.pending) pending_bytes_ -= body.size();
    item.pending.clear();
    item.close_owed = true;
    publish_status(item, closed);  // the image goes with it
    guarded(*log_, "on_item_rejected", [&] { handler_.on_item_rejected(item.handle, closed); });
}

// The distributor closed the connection frame_too_large although every frame
// was within the limit it announced (one from before the announcement, or its
// limit lowered since): the item of the largest frame sent since the login
// (at least as large as the one refused) is dropped rather than sent again
// after the reconnect, and closed again, for ever.
void PublisherCore::drop_refused_frame() {
    Item* const item = item_at(largest_sent_.handle);
    if (!item) {
        log_->error("{} closed the connection frame_too_large, and no item's frame was sent",
                    failover_.peer().to_string());
        return;
    }
    drop_oversize(*item, "frame of " + std::to_string(largest_sent_.bytes) + " bytes refused by " +
                             failover_.peer().to_string() +
                             " (closed frame_too_large; it announced a limit of " +
                             std::to_string(frame_limit_) + " bytes)");
}

}  // namespace mdcast::sdk
