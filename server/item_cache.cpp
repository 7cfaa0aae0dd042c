#include "server/item_cache.h"

#include <utility>

#include "proto/book_image.h"
#include "proto/source_ids.h"

namespace mdcast::server {

ItemCache::ItemCache(size_t hash_table_size, size_t max_items, bool keep_images,
                     size_t max_book_entries)
    : max_items_(max_items), keep_images_(keep_images), max_book_entries_(max_book_entries) {
    by_id_.reserve(hash_table_size);
    by_name_.reserve(hash_table_size);
}

ItemCache::Outcome ItemCache::apply_refresh(const wire::Refresh& refresh, CachedItem*& item) {
    item = find(refresh.item_id());
    if (item && item->fed_by) return Outcome::kFollowing;
    if (!item) {
        if (by_id_.size() >= max_items_) return Outcome::kLimitReached;
        auto created = std::make_unique<CachedItem>();
        created->id = refresh.item_id();
        created->service_id = refresh.service_id();
        created->service_name = refresh.service_name();
        created->name = refresh.item_name();
        item = created.get();
        index_name(*item);
        auto& of_service = by_service_[item->service_id];
        item->service_slot = of_service.size();
        of_service.push_back(item);
        by_id_[item->id] = std::move(created);
    } else if (refresh.solicited() && item->has_image && refresh.item_seq() == item->item_seq &&
               refresh.status().data_state() == item->status.data_state() &&
               refresh.status().stream_state() == item->status.stream_state()) {
        // The distributor's answer to another server's request, from the same
        // stream we applied: nothing new. A publisher's own refresh always counts.
        return Outcome::kRedundant;
    } else if (item->has_image && refresh.item_seq() < item->item_seq && !refresh.clear_cache()) {
        return Outcome::kStale;
    }
    auto book = proto::BookOutcome::kNone;
    if (keep_images_)
        book = proto::assign_refresh(item->image, refresh, max_book_entries_, book_why_);
    item->item_seq = refresh.item_seq();
    item->publish_time_ns = 0;  // a refresh carries no stamp
    item->status = refresh.status();
    item->has_image = book != proto::BookOutcome::kMalformed;
    if (book == proto::BookOutcome::kMalformed) {
        invalidate(*item, wire::STATUS_INVALID_REQUEST, "book refused: " + book_why_);
        return Outcome::kBookRefused;
    }
    return book == proto::BookOutcome::kFull ? book_full(*item) : Outcome::kApplied;
}

ItemCache::Outcome ItemCache::book_full(CachedItem& item) {
    if (item.status.code() == wire::STATUS_LIMIT_REACHED) return Outcome::kApplied;
    item.status.set_data_state(wire::DATA_SUSPECT);
    item.status.set_code(wire::STATUS_LIMIT_REACHED);
    item.status.set_text("cache.max_book_entries (" + std::to_string(max_book_entries_) +
                         ") reached: entries dropped from this book");
    return Outcome::kBookFull;
}

ItemCache::Outcome ItemCache::apply_update(const proto::UpdateView& update, CachedItem*& item) {
    item = find(update.item_id);
    if (!item) return Outcome::kUnknownItem;
    if (item->fed_by) return Outcome::kFollowing;
    return apply_update_to(*item, update);
}

ItemCache::Outcome ItemCache::apply_followed(CachedItem& follower, proto::UpdateView& update) {
    update.item_id = follower.id;
    update.item_seq += follower.seq_shift;
    return apply_update_to(follower, update);
}

void ItemCache::follow(CachedItem& follower, CachedItem& source) {
    unfollow(follower);
    if (source.feeds) source.feeds->fed_by = nullptr;
    follower.fed_by = &source;
    follower.seq_shift = follower.item_seq - source.item_seq;  // mod 2^64, as it is applied
    source.feeds = &follower;
}

void ItemCache::unfollow(CachedItem& follower) {
    if (!follower.fed_by) return;
    follower.fed_by->feeds = nullptr;
    follower.fed_by = nullptr;
    follower.seq_shift = 0;
}

ItemCache::Outcome ItemCache::apply_update_to(CachedItem& item, const proto::UpdateView& update) {
    if (!item.has_image) return Outcome::kNoImage;
    if (update.item_seq <= item.item_seq) return Outcome::kStale;
    // A conflated update (a parent conflating a cascade link) merges the ones
    // it skips: every field they changed, at its latest value. Not a gap.
    if (update.item_seq != item.item_seq + 1 && !update.conflated) {
        invalidate(item, wire::STATUS_UNRECOVERABLE_LOSS,
                   "updates " + std::to_string(item.item_seq + 1) + ".." +
                       std::to_string(update.item_seq - 1) + " were lost");
        return Outcome::kItemGap;
    }
    auto book = proto::BookOutcome::kNone;
    if (keep_images_) book = proto::apply_update(item.image, update, max_book_entries_, book_why_);
    if (book == proto::BookOutcome::kMalformed) {  // nothing applied: the item missed an update
        invalidate(item, wire::STATUS_UNRECOVERABLE_LOSS, "book update refused: " + book_why_);
        return Outcome::kItemGap;
    }
    item.item_seq = update.item_seq;
    item.publish_time_ns = update.publish_time_ns;
    return book == proto::BookOutcome::kFull ? book_full(item) : Outcome::kApplied;
}

ItemCache::Outcome ItemCache::apply_status(const wire::ItemStatus& status, CachedItem*& item) {
    item = find(status.item_id());
    if (!item) return Outcome::kUnknownItem;
    if (item->fed_by) return Outcome::kFollowing;
    item->status = status.status();
    // Closed, or upstream has no current image either (an interactive item
    // nobody wanted, its source stopped): the next subscriber asks upstream.
    const auto& s = status.status();
    if (s.stream_state() == wire::STREAM_CLOSED ||
        (s.data_state() == wire::DATA_SUSPECT && s.code() == wire::STATUS_RECOVERING)) {
        item->has_image = false;
    }
    return Outcome::kApplied;
}

CachedItem* ItemCache::find(uint64_t id) {
    return const_cast<CachedItem*>(std::as_const(*this).find(id));
}

const CachedItem* ItemCache::find(uint64_t id) const {
    const auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : it->second.get();
}

CachedItem* ItemCache::find(std::string_view service, std::string_view name) {
    const auto it = by_name_.find(NameKey{service, name});
    return it == by_name_.end() ? nullptr : it->second;
}

CachedItem* ItemCache::find(std::string_view service, std::string_view name, uint16_t source) {
    for (CachedItem* item = find(service, name); item; item = item->same_name) {
        if (proto::item_source(item->id) == source) return item;
    }
    return nullptr;
}

CachedItem* ItemCache::same_name_from(CachedItem& item, uint16_t source) {
    for (CachedItem* other = &item; other; other = other->same_name) {
        if (proto::item_source(other->id) == source) return other;
    }
    for (CachedItem* other = item.name_prev; other; other = other->name_prev) {
        if (proto::item_source(other->id) == source) return other;
    }
    return nullptr;
}

// The newest item of a name heads the chain (as a name re-registered under a
// new id replaces the old one); the key always views the head's own strings.
void ItemCache::index_name(CachedItem& item) {
    const auto head = by_name_.find(NameKey{item.service_name, item.name});
    if (head != by_name_.end()) {
        item.same_name = head->second;
        head->second->name_prev = &item;
        by_name_.erase(head);
    }
    by_name_.emplace(NameKey{item.service_name, item.name}, &item);
}

// A new head is indexed under its own strings.
void ItemCache::unindex_name(CachedItem& item) {
    if (CachedItem* next = item.same_name) next->name_prev = item.name_prev;
    if (CachedItem* before = item.name_prev) {
        before->same_name = item.same_name;
        return;
    }
    const auto head = by_name_.find(NameKey{item.service_name, item.name});
    if (head == by_name_.end() || head->second != &item) return;
    by_name_.erase(head);
    if (CachedItem* next = item.same_name) {
        by_name_.emplace(NameKey{next->service_name, next->name}, next);
    }
}

void ItemCache::invalidate(CachedItem& item, wire::StatusCode code, const std::string& text) {
    item.has_image = false;
    item.status.set_stream_state(wire::STREAM_OPEN);
    item.status.set_data_state(wire::DATA_SUSPECT);
    item.status.set_code(code);
    item.status.set_text(text);
}

void ItemCache::for_each(const std::function<void(CachedItem&)>& visit) {
    for (auto& [id, item] : by_id_) visit(*item);
}

void ItemCache::erase(uint64_t id) {
    const auto it = by_id_.find(id);
    if (it == by_id_.end()) return;
    unfollow(*it->second);
    if (CachedItem* follower = it->second->feeds) unfollow(*follower);
    unindex_name(*it->second);
    auto& of_service = by_service_[it->second->service_id];
    of_service[it->second->service_slot] = of_service.back();
    of_service[it->second->service_slot]->service_slot = it->second->service_slot;
    of_service.pop_back();
    if (of_service.empty()) by_service_.erase(it->second->service_id);
    by_id_.erase(it);
}

const std::vector<CachedItem*>* ItemCache::items_of_service(uint32_t service_id) const {
    const auto it = by_service_.find(service_id);
    return it == by_service_.end() ? nullptr : &it->second;
}

const std::vector<CachedItem*>* ItemCache::items_of_service(std::string_view service,
                                                            uint16_t source) const {
    for (const auto& [service_id, items] : by_service_) {
        if (proto::service_source(service_id) == source && items.front()->service_name == service)
            return &items;
    }
    return nullptr;
}

void ItemCache::clear() {
    by_service_.clear();
    by_name_.clear();
    by_id_.clear();
}

}  // namespace mdcast::server
