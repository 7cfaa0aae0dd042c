#include "distributor/interest_tracker.h"

namespace mdcast::distributor {

bool InterestTracker::should_request(uint64_t item_id, uint32_t service_id, int64_t now_ns) {
    const auto [it, first] = items_.try_emplace(item_id, Interest{service_id, now_ns});
    if (first) return true;
    Interest& interest = it->second;
    interest.service_id = service_id;
    if (now_ns - interest.last_request_ns < retry_ns_) return false;
    interest.last_request_ns = now_ns;
    return true;
}

std::vector<uint64_t> InterestTracker::rerequest_service(uint32_t service_id, int64_t now_ns) {
    std::vector<uint64_t> wanted;
    for (auto& [item_id, interest] : items_) {
        if (interest.service_id != service_id) continue;
        interest.last_request_ns = now_ns;
        wanted.push_back(item_id);
    }
    return wanted;
}

}  // namespace mdcast::distributor
