#include "distributor/item_registry.h"

#include <algorithm>

#include "distributor/takeover_rule.h"
#include "proto/limits.h"
#include "proto/source_ids.h"

namespace mdcast::distributor {

ItemRegistry::ItemRegistry(uint16_t source, uint32_t max_services, uint64_t max_items,
                           TradeFields trade_fields, uint64_t max_book_entries)
    : source_(source),
      max_services_(std::min<uint32_t>(max_services, 65535)),
      max_items_(max_items),
      trade_fields_(std::move(trade_fields)),
      max_book_entries_(max_book_entries) {}

std::string ItemRegistry::name_key(uint32_t service_id, const std::string& name) {
    return std::to_string(service_id) + '\0' + name;
}

ItemRegistry::AnnounceResult ItemRegistry::announce(const std::string& name, wire::ServiceMode mode,
                                                    uint64_t session, ServiceEntry*& out) {
    if (!proto::valid_service_name(name)) return AnnounceResult::kLimitReached;
    ServiceEntry* entry = service(name);
    if (entry && entry->owner_session != 0 && entry->owner_session != session) {
        return AnnounceResult::kOwnedByAnother;
    }
    if (!entry) {
        if (services_.size() >= max_services_) return AnnounceResult::kLimitReached;
        auto created = std::make_unique<ServiceEntry>();
        created->id = proto::make_service_id(source_, static_cast<uint32_t>(services_.size() + 1));
        created->name = name;
        created->trade_fields = trade_fields_.for_service(name);
        service_ids_[name] = created->id;
        entry = created.get();
        services_.push_back(std::move(created));
    }
    if (entry->owner_session != session) entry->takeover_token = new_takeover_token();
    entry->mode = mode;
    entry->owner_session = session;
    entry->state = wire::SERVICE_UP;
    out = entry;
    return AnnounceResult::kAccepted;
}

std::vector<uint32_t> ItemRegistry::release(uint64_t session) {
    std::vector<uint32_t> released;
    for (auto& entry : services_) {
        if (entry->owner_session != session) continue;
        entry->owner_session = 0;
        entry->state = wire::SERVICE_DOWN;
        released.push_back(entry->id);
    }
    return released;
}

ServiceEntry* ItemRegistry::service(uint32_t id) {
    if (proto::service_source(id) != source_) return nullptr;
    const uint32_t number = id & 0xFFFF;
    return number >= 1 && number <= services_.size() ? services_[number - 1].get() : nullptr;
}

ServiceEntry* ItemRegistry::service(const std::string& name) {
    const auto it = service_ids_.find(name);
    return it == service_ids_.end() ? nullptr : service(it->second);
}

ItemEntry* ItemRegistry::register_item(uint32_t service_id, const std::string& name) {
    ServiceEntry* owner = service(service_id);
    if (!owner || !proto::valid_item_name(name)) return nullptr;
    if (ItemEntry* existing = find_item(service_id, name)) return existing;
    if (live_items_ >= max_items_) return nullptr;
    size_t index = items_.size();
    if (!free_slots_.empty()) {
        index = free_slots_.back();
        free_slots_.pop_back();
    } else if (index >= kSlotMask) {
        return nullptr;
    } else {
        items_.emplace_back();
        generations_.push_back(0);
    }
    auto entry = std::make_unique<ItemEntry>();
    entry->id =
        proto::make_item_id(source_, uint64_t{generations_[index]} << kSlotBits | (index + 1));
    entry->service_id = service_id;
    entry->name = name;
    ItemEntry* raw = entry.get();
    item_ids_[name_key(service_id, name)] = raw->id;
    items_[index] = std::move(entry);
    ++live_items_;
    ++owner->item_count;
    counts_changed_ = true;
    return raw;
}

ItemEntry* ItemRegistry::item(uint64_t id) {
    const uint64_t slot = id & kSlotMask;
    if (proto::item_source(id) != source_ || slot == 0 || slot > items_.size()) return nullptr;
    ItemEntry* entry = items_[slot - 1].get();
    return entry && entry->id == id ? entry : nullptr;
}

bool ItemRegistry::release_item(uint64_t id) {
    ItemEntry* entry = item(id);
    if (!entry) return false;
    item_ids_.erase(name_key(entry->service_id, entry->name));
    if (ServiceEntry* owner = service(entry->service_id); owner && owner->item_count > 0) {
        --owner->item_count;
    }
    const size_t index = (id & kSlotMask) - 1;
    items_[index].reset();
    --live_items_;
    ++items_released_;
    counts_changed_ = true;
    // A slot whose generations are used up is retired: an id is never given twice.
    if (generations_[index] < kMaxGeneration) {
        ++generations_[index];
        free_slots_.push_back(static_cast<uint32_t>(index));
    }
    return true;
}

ItemEntry* ItemRegistry::find_item(uint32_t service_id, const std::string& name) {
    const auto it = item_ids_.find(name_key(service_id, name));
    return it == item_ids_.end() ? nullptr : item(it->second);
}

void ItemRegistry::mark_service_items_suspect(uint32_t service_id) {
    const ServiceEntry* owner = service(service_id);
    if (!owner) return;
    const std::string text = source_down_text(owner->name);
    for (auto& entry : items_) {
        if (!entry || entry->service_id != service_id) continue;
        entry->data_state = wire::DATA_SUSPECT;
        entry->status_code = wire::STATUS_SOURCE_DOWN;
        entry->status_text = text;
    }
}

wire::Directory ItemRegistry::directory() const {
    wire::Directory directory;
    for (const auto& entry : services_) {
        auto* info = directory.add_services();
        info->set_service_id(entry->id);
        info->set_name(entry->name);
        info->set_state(entry->state);
        info->set_mode(entry->mode);
        info->set_item_count(entry->item_count);
    }
    return directory;
}

void ItemRegistry::for_each_service(const std::function<void(const ServiceEntry&)>& visit) const {
    for (const auto& service : services_) {
        if (service) visit(*service);
    }
}

void ItemRegistry::for_each_item(const std::function<void(const ItemEntry&)>& visit) const {
    for (const auto& item : items_) {
        if (item) visit(*item);
    }
}

void ItemRegistry::for_each_item_of(uint32_t service_id,
                                    const std::function<void(ItemEntry&)>& visit) {
    for (auto& item : items_) {
        if (item && item->service_id == service_id) visit(*item);
    }
}

}  // namespace mdcast::distributor
