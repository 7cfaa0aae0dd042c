// Services and items known to the distributor: id assignment, ownership, and
// the distributor's image cache (answers image requests from servers).
//
// Ids are assigned once per distributor run and never reused while it runs, so
// a publisher that reconnects gets the same item ids back. A new run is a new
// epoch on the backbone and servers drop every id they knew.
//
// An item of an interactive service registered when a server asked for it,
// whose source never gave it an image, is released once nobody wants it
// (release_item): its slot is used again for another name, under a new
// generation in the id's high bits, so no id is ever given to two names.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "distributor/trade_fields.h"
#include "proto/field_image.h"
#include "wire/common.pb.h"

namespace mdcast::distributor {

namespace wire = mdcast::wire::v1;

struct ServiceEntry {
    uint32_t id = 0;
    std::string name;
    wire::ServiceMode mode = wire::SERVICE_BROADCAST;
    wire::ServiceState state = wire::SERVICE_DOWN;
    uint64_t owner_session = 0;  // 0: no publisher owns it now
    std::string takeover_token;  // given to the owner; proves a reconnect (takeover_rule.h)
    uint64_t item_count = 0;
    std::vector<uint32_t> trade_fields;  // sorted ids making an update a trade (trades.fields)
};

// What a subscriber is told of an item whose service's source went away.
inline std::string source_down_text(const std::string& service) {
    return "service " + service + " is down: its source went away";
}

struct ItemEntry {
    uint64_t id = 0;
    uint32_t service_id = 0;
    std::string name;
    uint64_t item_seq = 0;    // last per-item sequence seen
    bool has_image = false;   // a refresh arrived since the publisher (re)started the item
    proto::FieldImage image;  // refresh merged with every update since
    wire::DataState data_state = wire::DATA_SUSPECT;
    // Why data_state is what it is: the publisher's code and text, or the
    // distributor's when it marked the item suspect. An image served from the
    // cache carries them, so its subscribers see why it is not current.
    wire::StatusCode status_code = wire::STATUS_NONE;
    std::string status_text;
    bool closed = false;
    std::string closed_text;  // why a limit closed it (empty: closed by its source)
    // Interactive: nobody wants the item and its source was told to stop, so
    // the image is not current; the next request asks the source for a fresh one.
    bool unwanted = false;
    // Standby publishers (publisher_group.h): the backbone's sequence is the
    // active publisher's plus this (mod 2^64), so a switch carries the item's
    // sequence on; 0 until one. `realign_seq`: the active publisher had no
    // image of the item at the switch; its first refresh continues the sequence.
    uint64_t seq_shift = 0;
    bool realign_seq = false;
};

// What asking an interactive item's source came to (interest_leases.h).
struct SourceAsk {
    ItemEntry* item = nullptr;  // registered if new; nullptr: unknown and nobody to ask
    bool asked = false;         // the source was asked just now
    std::string refusal;        // not empty: refused over a bound (item is nullptr)
};

class ItemRegistry {
  public:
    // Ids carry `source` (the distributor id) in their top bits: proto/source_ids.h.
    ItemRegistry(uint16_t source, uint32_t max_services, uint64_t max_items,
                 TradeFields trade_fields = {}, uint64_t max_book_entries = 10000);

    enum class AnnounceResult { kAccepted, kOwnedByAnother, kLimitReached };
    // Creates the service, or takes over one no publisher owns. Sets it up.
    // kLimitReached also for a name proto/limits.h does not allow.
    AnnounceResult announce(const std::string& name, wire::ServiceMode mode, uint64_t session,
                            ServiceEntry*& out);
    // Marks every service of `session` down and ownerless; returns their ids.
    std::vector<uint32_t> release(uint64_t session);

    ServiceEntry* service(uint32_t id);
    const ServiceEntry* service(uint32_t id) const {
        return const_cast<ItemRegistry*>(this)->service(id);
    }
    ServiceEntry* service(const std::string& name);

    // Existing or new item in an existing service; nullptr when max_items is
    // reached or the name is not one proto/limits.h allows.
    ItemEntry* register_item(uint32_t service_id, const std::string& name);
    // Forgets the item: its name, its id (never given again) and its slot (for
    // another name). False when the id is unknown.
    bool release_item(uint64_t id);
    ItemEntry* item(uint64_t id);
    ItemEntry* find_item(uint32_t service_id, const std::string& name);

    // Service items whose images are now stale because their source went away:
    // suspect, SOURCE_DOWN, with source_down_text() of the service.
    void mark_service_items_suspect(uint32_t service_id);

    wire::Directory directory() const;
    // True once when items were registered since the last call: the directory sent
    // at the service's announcement counted none of them (item_count), so it is due
    // again. Asked once a second, so a burst of registrations costs one directory.
    bool take_counts_changed() { return std::exchange(counts_changed_, false); }
    // Every service and every item, each in id order, for /stats.
    void for_each_service(const std::function<void(const ServiceEntry&)>& visit) const;
    void for_each_item(const std::function<void(const ItemEntry&)>& visit) const;
    // Every item of one service, to change (a standby switch).
    void for_each_item_of(uint32_t service_id, const std::function<void(ItemEntry&)>& visit);
    size_t item_count() const { return live_items_; }
    uint64_t items_released() const { return items_released_; }
    size_t service_count() const { return services_.size(); }
    // Entries a book item's image may hold (registry.max_book_entries).
    uint64_t max_book_entries() const { return max_book_entries_; }

  private:
    static std::string name_key(uint32_t service_id, const std::string& name);

    uint16_t source_;
    uint32_t max_services_;
    uint64_t max_items_;
    TradeFields trade_fields_;
    uint64_t max_book_entries_;
    std::vector<std::unique_ptr<ServiceEntry>> services_;  // index = service number - 1
    std::unordered_map<std::string, uint32_t> service_ids_;
    // An item number is generation << kSlotBits | slot (1-based): the lookup
    // every update makes is an index and a compare. A released slot is null
    // until another name takes it with the next generation.
    static constexpr int kSlotBits = 28;  // registry.max_items is at most 10^8
    static constexpr uint64_t kSlotMask = (uint64_t{1} << kSlotBits) - 1;
    static constexpr uint16_t kMaxGeneration = (1 << (40 - kSlotBits)) - 1;
    std::vector<std::unique_ptr<ItemEntry>> items_;  // index = slot - 1
    std::vector<uint16_t> generations_;              // the slot's current generation
    std::vector<uint32_t> free_slots_;               // released indexes to use again
    size_t live_items_ = 0;
    uint64_t items_released_ = 0;
    std::unordered_map<std::string, uint64_t> item_ids_;  // name_key -> id
    bool counts_changed_ = false;
};

}  // namespace mdcast::distributor
