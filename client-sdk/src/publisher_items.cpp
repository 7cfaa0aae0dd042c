// What the publisher sends for each item (docs/sdk.md, "A complete publisher"):
// refreshes, updates (the hot path), statuses, and the updates a broadcast item
// holds until the distributor has registered it.
#include "event_writer.h"
#include "proto/book_image.h"
#include "proto/limits.h"
#include "publisher_core.h"

namespace mdcast::sdk {

using proto::FrameType;
namespace wire = mdcast::wire::v1;

bool PublisherCore::sendable(const Item& item) const {
    return session_up_ && item.service->id != 0 && item.item_id != 0 &&
           (item.service->mode == ServiceMode::kBroadcast || item.requested);
}

void PublisherCore::publish_refresh(Item& item, std::span<const proto::FieldEntry> fields,
                                    const ItemState& state, uint8_t domain,
                                    std::span<const uint8_t> map) {
    item.image.clear();
    item.image.apply(fields);
    if (domain != 0) {  // a book: its entries kept as they will be sent again after a reconnect
        auto book = std::make_unique<proto::BookImage>(static_cast<wire::Domain>(domain));
        std::string why;
        if (book->apply(map, proto::kMaxMapEntries, why) == proto::BookImage::Result::kMalformed)
            log_->warn("book refresh of {}: {}", item.name, why);
        item.image.set_book(std::move(book));
    }
    item.state = state;
    item.has_refresh = state.stream == StreamState::kOpen;
    item.close_owed = false;
    if (sendable(item)) send_refresh(item);
}

void PublisherCore::send_refresh(Item& item) {
    wire::Refresh refresh;
    refresh.set_item_id(item.item_id);
    refresh.set_item_seq(item.seq);
    refresh.set_clear_cache(true);
    refresh.set_solicited(item.service->mode == ServiceMode::kInteractive);
    detail::to_wire_status(item.state, *refresh.mutable_status());
    item.image.to_field_list(*refresh.mutable_fields());
    proto::book_into_refresh(item.image, refresh);
    const size_t bytes = refresh.ByteSizeLong();
    if (bytes > frame_limit_) {
        return drop_oversize(item, frame_over_limit(item.image.book() ? "book image" : "image",
                                                    bytes, frame_limit_));
    }
    if (!send(FrameType::kRefresh, refresh)) return drop_link();
    note_sent(item, bytes);
    counters_.refreshes_sent.fetch_add(1, std::memory_order_relaxed);
}

// The hot path: the update was encoded on the publishing thread; here it is
// merged into the image and framed with the item's id and sequence into the
// batch that flush_updates() writes.
void PublisherCore::publish_update(Item& item, std::span<const proto::FieldEntry> fields,
                                   std::span<const uint8_t> rest, bool book) {
    if (!item.has_refresh || (book && !item.image.book())) {
        counters_.updates_dropped.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    if (!item.pending.empty() || (!sendable(item) && !item.ever_registered &&
                                  item.service->mode == ServiceMode::kBroadcast)) {
        return hold_until_registered(item, rest);
    }
    if (!book) {
        item.image.apply(fields);
    } else if (!proto::decode_update(rest, update_) || !apply_to_image(item, update_)) {
        return;
    }
    ++item.seq;
    if (!sendable(item)) {
        counters_.updates_held.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    send_update(item, rest, book);
}

// An update (a book's actions too) merged into the item's image; false, counted
// dropped, when its map does not fit the item (keys of the wrong kind).
bool PublisherCore::apply_to_image(Item& item, const proto::UpdateView& update) {
    std::string why;
    if (proto::apply_update(item.image, update, proto::kMaxMapEntries, why) !=
        proto::BookOutcome::kMalformed) {
        return true;
    }
    counters_.updates_dropped.fetch_add(1, std::memory_order_relaxed);
    log_->warn("book update of {} dropped: {}", item.name, why);
    return false;
}

void PublisherCore::send_update(Item& item, std::span<const uint8_t> rest, bool book) {
    const size_t bytes = update_body_bound(rest.size());
    if (bytes > frame_limit_) [[unlikely]] {
        return drop_oversize(
            item, frame_over_limit(book ? "book update" : "update", bytes, frame_limit_));
    }
    note_sent(item, bytes);
    proto::append_update_frame(out_, item.item_id, item.seq, rest, book ? proto::kFrameFlagMap : 0);
    ++unflushed_updates_;
}

// THE ORDERING RULE (docs/sdk.md): a broadcast item's updates published before
// its first registration are kept in order and sent after its refresh, each
// with its own sequence number, not merged into the image. Kept as Update
// bodies without item id and sequence (proto3 leaves zero fields out), which
// send_pending() completes; over max_queued_bytes they are merged after all.
void PublisherCore::hold_until_registered(Item& item, std::span<const uint8_t> rest) {
    pending_bytes_ += rest.size();
    item.pending.emplace_back(reinterpret_cast<const char*>(rest.data()), rest.size());
    if (pending_bytes_ > options_.max_queued_bytes) fold_pending(item);
}

// The item's held updates merged into its image after all (bounded memory).
void PublisherCore::fold_pending(Item& item) {
    for (const std::string& body : item.pending) {
        pending_bytes_ -= body.size();
        if (!proto::decode_update(
                std::span(reinterpret_cast<const uint8_t*>(body.data()), body.size()), update_)) {
            continue;
        }
        if (!apply_to_image(item, update_)) continue;
        ++item.seq;
        counters_.updates_held.fetch_add(1, std::memory_order_relaxed);
    }
    item.pending.clear();
}

// After the refresh: the held updates, in order, with the item's id and the
// sequence numbers that follow the refresh's.
void PublisherCore::send_pending(Item& item) {
    std::vector<std::string> pending;
    pending.swap(item.pending);
    for (const std::string& body : pending) pending_bytes_ -= body.size();
    for (const std::string& body : pending) {
        const auto bytes = std::span(reinterpret_cast<const uint8_t*>(body.data()), body.size());
        if (!proto::decode_update(bytes, update_) || !apply_to_image(item, update_)) continue;
        ++item.seq;
        send_update(item, bytes, !update_.map_bytes.empty());
        if (!item.has_refresh) return;  // dropped for its size (the rest with it)
    }
}

void PublisherCore::publish_status(Item& item, const ItemState& state) {
    item.state = state;
    const bool to_send = sendable(item);
    if (state.stream == StreamState::kClosed) {
        item.has_refresh = false;
        item.image.clear();
    }
    if (!to_send) return;
    wire::ItemStatus status;
    status.set_item_id(item.item_id);
    detail::to_wire_status(state, *status.mutable_status());
    if (send(FrameType::kItemStatus, status)) {
        counters_.statuses_sent.fetch_add(1, std::memory_order_relaxed);
    }
}

}  // namespace mdcast::sdk
