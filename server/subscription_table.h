// Who is subscribed to which item, grouped by view (field subset) and encoding.
//
// Each item keeps one group per distinct view and encoding (binary or JSON),
// so an update is filtered and encoded once per group, not once per client;
// the binary group with no view gets the original bytes. Subscriptions with a
// conflation interval (conflate_ms) are grouped by interval as well, and the
// group holds their one pacing state (interval_conflation.h): 2,000 grids
// asking for 100 ms cost one merge per update and one encoding per interval,
// not 2,000 of each. Header-only so tests can use any client type.
//
// Groups live in a list (their addresses never move) and every (item, client)
// pair is indexed to its group, so adding, removing and finding a client's
// group cost the same with 2 or 20,000 subscribers of an item. Each group has
// a serial number, never reused, by which a timer finds it again (or finds it
// gone) without holding its address.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <list>
#include <unordered_map>
#include <utility>
#include <vector>

#include "server/interval_conflation.h"

namespace mdcast::server {

template <class Client>
class SubscriptionTable {
  public:
    struct Group {
        std::vector<uint32_t> view;  // sorted field ids; empty: all fields
        std::vector<Client*> clients;
        bool json = false;  // WebSocket/JSON subscribers
        PacedSlot pace;     // interval_ms > 0: the group's conflated subscriptions
        uint64_t serial = 0;
        // Members sent an image while the slot owed an update, with the item
        // sequence that image carried: the owed update goes to them only if it
        // is newer. Emptied when the owed update goes out or an image replaces it.
        std::vector<std::pair<const Client*, uint64_t>> imaged;

        bool paced() const { return pace.interval_ms > 0; }
        // The owed update (sequence `seq`) is not for `client`: its image had it.
        bool image_covers(const Client* client, uint64_t seq) const {
            return std::any_of(imaged.begin(), imaged.end(), [&](const auto& entry) {
                return entry.first == client && entry.second >= seq;
            });
        }
    };

    using Groups = std::list<Group>;

    // False when the client already holds this item (in any view).
    bool add(uint64_t item_id, Client* client, const std::vector<uint32_t>& view, bool json = false,
             uint32_t conflate_ms = 0) {
        if (where_.contains(Key{item_id, client})) return false;
        auto& groups = items_[item_id];
        auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
            return g.pace.interval_ms == conflate_ms && g.view == view && g.json == json;
        });
        if (it == groups.end()) {
            it = groups.insert(groups.end(), Group{view, {}, json, {}, ++serials_, {}});
            it->pace.interval_ms = conflate_ms;
        }
        it->clients.push_back(client);
        where_.emplace(Key{item_id, client}, &*it);
        return true;
    }

    bool remove(uint64_t item_id, Client* client) {
        const auto at = where_.find(Key{item_id, client});
        if (at == where_.end()) return false;
        Group* group = at->second;
        where_.erase(at);
        group->clients.erase(std::find(group->clients.begin(), group->clients.end(), client));
        std::erase_if(group->imaged, [client](const auto& entry) { return entry.first == client; });
        if (!group->clients.empty()) return true;
        auto& groups = items_.at(item_id);
        groups.remove_if([group](const Group& g) { return &g == group; });
        if (groups.empty()) items_.erase(item_id);
        return true;
    }

    const Groups* find(uint64_t item_id) const {
        const auto it = items_.find(item_id);
        return it == items_.end() ? nullptr : &it->second;
    }
    Groups* find(uint64_t item_id) {
        const auto it = items_.find(item_id);
        return it == items_.end() ? nullptr : &it->second;
    }
    // The client's group for the item; null when it does not hold it.
    Group* group_of(uint64_t item_id, const Client* client) {
        const auto it = where_.find(Key{item_id, const_cast<Client*>(client)});
        return it == where_.end() ? nullptr : it->second;
    }

    // The item's group with this serial; null when it is gone.
    Group* group_by_serial(uint64_t item_id, uint64_t serial) {
        Groups* groups = find(item_id);
        if (!groups) return nullptr;
        const auto it = std::find_if(groups->begin(), groups->end(),
                                     [serial](const Group& g) { return g.serial == serial; });
        return it == groups->end() ? nullptr : &*it;
    }

    Groups take(uint64_t item_id) {
        Groups groups;
        const auto it = items_.find(item_id);
        if (it != items_.end()) {
            groups = std::move(it->second);
            items_.erase(it);
            for (const Group& group : groups)
                for (Client* client : group.clients) where_.erase(Key{item_id, client});
        }
        return groups;
    }

    std::vector<uint64_t> item_ids() const {
        std::vector<uint64_t> ids;
        ids.reserve(items_.size());
        for (const auto& [id, groups] : items_) ids.push_back(id);
        return ids;
    }

    void clear() {
        items_.clear();
        where_.clear();
    }
    size_t item_count() const { return items_.size(); }

  private:
    struct Key {
        uint64_t item_id;
        Client* client;
        bool operator==(const Key&) const = default;
    };
    struct KeyHash {
        size_t operator()(const Key& key) const {
            return std::hash<uint64_t>()(key.item_id) * 31 + std::hash<const void*>()(key.client);
        }
    };

    std::unordered_map<uint64_t, Groups> items_;
    std::unordered_map<Key, Group*, KeyHash> where_;  // every (item, client) to its group
    uint64_t serials_ = 0;                            // the last group's serial
};

}  // namespace mdcast::server
