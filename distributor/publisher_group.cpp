#include "distributor/publisher_group.h"

#include <algorithm>

namespace mdcast::distributor {

std::string_view group_switch_reason_name(GroupSwitchReason reason) {
    switch (reason) {
        case GroupSwitchReason::kPublisherGone:
            return "publisher_gone";
        case GroupSwitchReason::kPreferred:
            return "preferred";
    }
    return "unknown";
}

PublisherGroup::PublisherGroup(uint32_t service_id, GroupMember active)
    : service_id_(service_id), active_(active.session) {
    members_.push_back(std::move(active));
}

GroupMember* PublisherGroup::member(uint64_t session) {
    for (auto& m : members_) {
        if (m.session == session) return &m;
    }
    return nullptr;
}

// Best rank first; of equal rank, the one in the group longest (no switch
// between equals).
static bool better(const GroupMember& a, const GroupMember& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.joined_ns < b.joined_ns;
}

void PublisherGroup::replace_active(GroupMember replacement) {
    const uint64_t session = replacement.session;
    for (auto& m : members_) {
        if (m.session == active_) m = std::move(replacement);
    }
    active_ = session;
}

std::optional<uint64_t> PublisherGroup::leave(uint64_t session) {
    std::erase_if(members_, [session](const GroupMember& m) { return m.session == session; });
    if (session != active_ || members_.empty()) return std::nullopt;
    return std::min_element(members_.begin(), members_.end(), better)->session;
}

std::optional<uint64_t> PublisherGroup::preferred(int64_t now_ns, int64_t hold_down_ns) const {
    const GroupMember* active = nullptr;
    for (const auto& m : members_) {
        if (m.session == active_) active = &m;
    }
    const GroupMember* best = nullptr;
    for (const auto& m : members_) {
        if (m.session == active_ || now_ns - m.joined_ns < hold_down_ns) continue;
        if (active && m.rank >= active->rank) continue;
        if (!best || better(m, *best)) best = &m;
    }
    return best ? std::optional(best->session) : std::nullopt;
}

void PublisherGroup::set_active(const GroupSwitch& done) {
    active_ = done.to;
    ++switches_[done.reason];
    last_switch_ = done;
}

uint64_t PublisherGroup::switches(GroupSwitchReason reason) const {
    const auto it = switches_.find(reason);
    return it == switches_.end() ? 0 : it->second;
}

}  // namespace mdcast::distributor
