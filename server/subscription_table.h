// Who is subscribed to which item, grouped by view (field subset) and encoding.
//
// Each item keeps one group per distinct view and encoding (binary or JSON),
// so an update is filtered and encoded once per group, not once per client;
// the binary group with no view gets the original bytes. A subscription with a
// conflation interval (conflate_ms) is a group of its own, holding its pacing
// state (interval_conflation.h). Header-only so tests can use any client type.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
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
        PacedSlot pace;     // interval_ms > 0: one conflated subscription (one client)

        bool paced() const { return pace.interval_ms > 0; }
    };

    // False when the client already holds this item (in any view).
    bool add(uint64_t item_id, Client* client, const std::vector<uint32_t>& view, bool json = false,
             uint32_t conflate_ms = 0) {
        auto& groups = items_[item_id];
        for (const auto& group : groups) {
            if (std::find(group.clients.begin(), group.clients.end(), client) !=
                group.clients.end()) {
                return false;
            }
        }
        if (conflate_ms > 0) {
            Group& own = groups.emplace_back(Group{view, {client}, json, {}});
            own.pace.interval_ms = conflate_ms;
            return true;
        }
        auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
            return !g.paced() && g.view == view && g.json == json;
        });
        if (it == groups.end()) it = groups.insert(groups.end(), Group{view, {}, json, {}});
        it->clients.push_back(client);
        return true;
    }

    bool remove(uint64_t item_id, Client* client) {
        const auto found = items_.find(item_id);
        if (found == items_.end()) return false;
        auto& groups = found->second;
        for (auto g = groups.begin(); g != groups.end(); ++g) {
            const auto c = std::find(g->clients.begin(), g->clients.end(), client);
            if (c == g->clients.end()) continue;
            g->clients.erase(c);
            if (g->clients.empty()) groups.erase(g);
            if (groups.empty()) items_.erase(found);
            return true;
        }
        return false;
    }

    const std::vector<Group>* find(uint64_t item_id) const {
        const auto it = items_.find(item_id);
        return it == items_.end() ? nullptr : &it->second;
    }
    std::vector<Group>* find(uint64_t item_id) {
        const auto it = items_.find(item_id);
        return it == items_.end() ? nullptr : &it->second;
    }
    // The client's group for the item; null when it does not hold it.
    Group* group_of(uint64_t item_id, const Client* client) {
        auto* groups = find(item_id);
        if (!groups) return nullptr;
        for (auto& group : *groups) {
            if (std::find(group.clients.begin(), group.clients.end(), client) !=
                group.clients.end()) {
                return &group;
            }
        }
        return nullptr;
    }

    std::vector<Group> take(uint64_t item_id) {
        std::vector<Group> groups;
        const auto it = items_.find(item_id);
        if (it != items_.end()) {
            groups = std::move(it->second);
            items_.erase(it);
        }
        return groups;
    }

    std::vector<uint64_t> item_ids() const {
        std::vector<uint64_t> ids;
        ids.reserve(items_.size());
        for (const auto& [id, groups] : items_) ids.push_back(id);
        return ids;
    }

    void clear() { items_.clear(); }
    size_t item_count() const { return items_.size(); }

  private:
    std::unordered_map<uint64_t, std::vector<Group>> items_;
};

}  // namespace mdcast::server
