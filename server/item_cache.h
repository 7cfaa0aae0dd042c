// The server's item cache: one entry per item of the current source epoch,
// holding the image (refresh merged with every update since), the per-item
// sequence number and data state, and an index by (service, item name) that
// keeps every distributor's item of one name (redundant sources).
//
// Pure logic over protobuf messages; the server decides what to tell clients
// from the results.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proto/field_image.h"
#include "proto/update_codec.h"
#include "wire/common.pb.h"

namespace mdcast::server {

namespace wire = mdcast::wire::v1;

struct CachedItem {
    uint64_t id = 0;
    uint32_t service_id = 0;
    std::string service_name;
    std::string name;
    uint64_t item_seq = 0;
    uint64_t publish_time_ns = 0;  // the last applied update's stamp (0: none since the image)
    bool has_image = false;        // false: image unknown or invalid; ask upstream
    proto::FieldImage image;
    wire::Status status;  // stream and data state, code, text
    // The next item of the same (service, name) from another distributor: the
    // members of a redundancy group (server/redundancy/) each publish their own.
    CachedItem* same_name = nullptr;
    CachedItem* name_prev = nullptr;  // the one before in that chain (null: the first)
    size_t service_slot = 0;          // its place in ItemCache's list of its service's items
    // Set when the fan-out gives it a subscriber, cleared when it takes them
    // all away; left set when they leave one by one. A switch trusts it to
    // mean "subscribed" (moving an item nobody holds costs only time) and asks
    // the fan-out when it is not set.
    bool subscribed_hint = false;
    // A switch to a hot standby (server/redundancy/item_mirror.cpp): this
    // item's subscribers are served `fed_by`, another member's item of the same
    // name, under this item's id and at its sequence (item_seq = fed_by's +
    // seq_shift, mod 2^64); the image and status here are fed_by's. Messages of
    // this item's own source are not applied meanwhile (kFollowing).
    // `feeds` is the reverse link: at most one follower per item.
    CachedItem* fed_by = nullptr;
    CachedItem* feeds = nullptr;
    uint64_t seq_shift = 0;
};

// An image subscribers may be served or switched to: held, open and ok.
inline bool has_current_image(const CachedItem& item) {
    return item.has_image && item.status.stream_state() == wire::STREAM_OPEN &&
           item.status.data_state() == wire::DATA_OK;
}

class ItemCache {
  public:
    // With keep_images false (cache.enable_cache: false) only an item's state
    // (names, sequence, status) is kept; images are fetched upstream when needed.
    // A book item (docs/books.md) holds at most `max_book_entries` entries.
    ItemCache(size_t hash_table_size, size_t max_items, bool keep_images = true,
              size_t max_book_entries = 10000);
    bool keeps_images() const { return keep_images_; }

    enum class Outcome {
        kApplied,       // state changed; tell subscribers
        kRedundant,     // a refresh identical in sequence to what is cached
        kStale,         // sequence at or below the cached one: dropped
        kItemGap,       // sequence jumped: the item missed updates; now suspect
        kNoImage,       // update for an item without a valid image: dropped
        kUnknownItem,   // update or status for an item not in the cache: ignored
        kLimitReached,  // a new item beyond cache.max_items: refused
        kBookFull,      // applied, but a book went over cache.max_book_entries: entries were
                        // dropped and the item is now suspect (LIMIT_REACHED); tell subscribers
        kBookRefused,   // a refresh's map refused (book_why()): the item has no image
        kFollowing,     // the item is served another member's item (fed_by): not applied
    };

    // Creates or replaces the item's image. `item` is set unless kLimitReached.
    Outcome apply_refresh(const wire::Refresh& refresh, CachedItem*& item);
    Outcome apply_update(const proto::UpdateView& update, CachedItem*& item);
    // A closed stream, or a suspect RECOVERING one (upstream has no current
    // image), leaves the item without an image.
    Outcome apply_status(const wire::ItemStatus& status, CachedItem*& item);

    CachedItem* find(uint64_t id);
    const CachedItem* find(uint64_t id) const;
    // The first of the items by that name (one per distributor publishing it);
    // the others follow through CachedItem::same_name.
    CachedItem* find(std::string_view service, std::string_view name);
    // The one `source` (a distributor id) publishes.
    CachedItem* find(std::string_view service, std::string_view name, uint16_t source);
    // The same, from another item of that name: along the chain, no look-up by name.
    static CachedItem* same_name_from(CachedItem& item, uint16_t source);

    // From now on `follower` is served `source` (CachedItem::fed_by), at the
    // sequence it has: its image and status should be source's already.
    static void follow(CachedItem& follower, CachedItem& source);
    // Ends `follower`'s link to its fed_by (if any).
    static void unfollow(CachedItem& follower);
    // An update `follower`'s fed_by applied, applied to the follower at its own
    // id and sequence (`update` is rewritten to them).
    Outcome apply_followed(CachedItem& follower, proto::UpdateView& update);

    // Marks the image invalid and suspect (loss, source down); next subscriber asks upstream.
    static void invalidate(CachedItem& item, wire::StatusCode code, const std::string& text);

    void for_each(const std::function<void(CachedItem&)>& visit);
    // The items of one service (one distributor's), in no particular order;
    // null when it has none. Valid until an item of it is created or erased.
    const std::vector<CachedItem*>* items_of_service(uint32_t service_id) const;
    // The same for the service of that name a distributor (`source`) publishes.
    const std::vector<CachedItem*>* items_of_service(std::string_view service,
                                                     uint16_t source) const;
    void erase(uint64_t id);
    void clear();
    size_t size() const { return by_id_.size(); }
    size_t max_items() const { return max_items_; }
    size_t max_book_entries() const { return max_book_entries_; }
    // Why the last kBookFull, kBookRefused or book kItemGap happened.
    const std::string& book_why() const { return book_why_; }

  private:
    void index_name(CachedItem& item);
    void unindex_name(CachedItem& item);

    // (service, item name) viewing the strings inside the CachedItem itself, so
    // the index stores no copy of either.
    using NameKey = std::pair<std::string_view, std::string_view>;
    struct NameKeyHash {
        size_t operator()(const NameKey& key) const {
            const size_t h = std::hash<std::string_view>{}(key.first);
            return h ^ (std::hash<std::string_view>{}(key.second) + 0x9e3779b97f4a7c15ull +
                        (h << 6) + (h >> 2));
        }
    };

    Outcome apply_update_to(CachedItem& item, const proto::UpdateView& update);
    // kBookFull once, when the book first goes over: the status says it until a refresh.
    Outcome book_full(CachedItem& item);

    size_t max_items_;
    bool keep_images_;
    size_t max_book_entries_;
    std::string book_why_;
    std::unordered_map<uint64_t, std::unique_ptr<CachedItem>> by_id_;
    std::unordered_map<NameKey, CachedItem*, NameKeyHash> by_name_;
    std::unordered_map<uint32_t, std::vector<CachedItem*>> by_service_;
};

}  // namespace mdcast::server
