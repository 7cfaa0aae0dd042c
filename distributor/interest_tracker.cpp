#include "distributor/interest_tracker.h"

#include <algorithm>

namespace mdcast::distributor {

// Starts or extends `server`'s lease on the item. kNew when the item was not
// tracked (nobody wanted it); kRefused when a new server would exceed
// kMaxServersPerItem (an untracked item is then not created either).
InterestTracker::Hold InterestTracker::hold(uint64_t item_id, uint32_t service_id, uint64_t server,
                                            int64_t now_ns, Interest*& interest) {
    const auto [it, first] = items_.try_emplace(item_id);
    interest = &it->second;
    interest->service_id = service_id;
    const int64_t expires = now_ns + settings_.lease_ns;
    auto& leases = interest->leases;
    const auto mine = std::find_if(leases.begin(), leases.end(),
                                   [&](const Lease& l) { return l.server == server; });
    if (mine != leases.end()) {
        mine->expires_ns = expires;
        return Hold::kRenewed;
    }
    if (leases.size() >= kMaxServersPerItem) {
        ++counters_.refused;
        return Hold::kRefused;
    }
    leases.push_back(Lease{server, expires});
    return first ? Hold::kNew : Hold::kRenewed;
}

bool InterestTracker::should_request(uint64_t item_id, uint32_t service_id, uint64_t server,
                                     int64_t now_ns) {
    Interest* interest = nullptr;
    const Hold held = hold(item_id, service_id, server, now_ns, interest);
    if (held == Hold::kRefused) return false;
    if (held != Hold::kNew && now_ns - interest->last_request_ns < settings_.retry_ns) {
        return false;
    }
    interest->last_request_ns = now_ns;
    return true;
}

bool InterestTracker::renew(uint64_t item_id, uint32_t service_id, uint64_t server,
                            int64_t now_ns) {
    Interest* interest = nullptr;
    const Hold held = hold(item_id, service_id, server, now_ns, interest);
    if (held == Hold::kRefused) return false;
    ++counters_.renewals;
    if (held != Hold::kNew) return false;
    interest->last_request_ns = now_ns;
    return true;
}

void InterestTracker::release(uint64_t item_id, uint64_t server, int64_t now_ns) {
    const auto it = items_.find(item_id);
    if (it == items_.end()) return;
    auto& leases = it->second.leases;
    if (std::erase_if(leases, [&](const Lease& l) { return l.server == server; }) == 0) return;
    ++counters_.releases;
    if (leases.empty()) it->second.unwanted_since_ns = now_ns;
}

std::vector<InterestTracker::Dropped> InterestTracker::expire(int64_t now_ns) {
    std::vector<Dropped> dropped;
    for (auto it = items_.begin(); it != items_.end();) {
        Interest& interest = it->second;
        if (!interest.leases.empty()) {
            const size_t ended = std::erase_if(
                interest.leases, [&](const Lease& l) { return l.expires_ns <= now_ns; });
            counters_.leases_expired += ended;
            if (interest.leases.empty()) interest.unwanted_since_ns = now_ns;
        }
        if (interest.leases.empty() && now_ns - interest.unwanted_since_ns >= settings_.hold_ns) {
            dropped.push_back(Dropped{it->first, interest.service_id});
            ++counters_.items_dropped;
            it = items_.erase(it);
        } else {
            ++it;
        }
    }
    return dropped;
}

std::vector<uint64_t> InterestTracker::rerequest_service(uint32_t service_id, int64_t now_ns) {
    std::vector<uint64_t> wanted;
    for (auto& [item_id, interest] : items_) {
        if (interest.service_id != service_id || interest.leases.empty()) continue;
        interest.last_request_ns = now_ns;
        wanted.push_back(item_id);
    }
    return wanted;
}

size_t InterestTracker::lease_count() const {
    size_t leases = 0;
    for (const auto& [id, interest] : items_) leases += interest.leases.size();
    return leases;
}

size_t InterestTracker::holders(uint64_t item_id) const {
    const auto it = items_.find(item_id);
    return it == items_.end() ? 0 : it->second.leases.size();
}

}  // namespace mdcast::distributor
