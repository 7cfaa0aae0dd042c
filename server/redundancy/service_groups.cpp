#include "server/redundancy/service_groups.h"

#include <algorithm>
#include <tuple>

namespace mdcast::server {

const char* switch_reason_name(SwitchReason reason) {
    switch (reason) {
        case SwitchReason::kServiceDown:
            return "service_down";
        case SwitchReason::kSourceSilent:
            return "source_silent";
        case SwitchReason::kSourceReset:
            return "source_reset";
        case SwitchReason::kPreferred:
            return "preferred";
    }
    return "unknown";
}

void ServiceGroups::configure(std::vector<uint16_t> rank, int64_t hold_down_ns) {
    rank_ = std::move(rank);
    hold_down_ns_ = hold_down_ns;
}

size_t ServiceGroups::rank_of(uint16_t source) const {
    const auto it = std::find(rank_.begin(), rank_.end(), source);
    if (it != rank_.end()) return static_cast<size_t>(it - rank_.begin());
    return rank_.size() + source;  // unranked: after every ranked id, lowest id first
}

// Usable = listed up and heard; `usable_since_ns` restarts at every return,
// which is what makes the hold-down hold a flapping member off.
void ServiceGroups::refresh_usable(Member& member, bool heard, int64_t now_ns, SwitchReason why) {
    const bool usable_now = member.listed_up && heard;
    if (usable_now && member.usable_since_ns == 0) {
        member.usable_since_ns = std::max<int64_t>(now_ns, 1);
        member.down_reason.reset();
    } else if (!usable_now && member.usable_since_ns != 0) {
        member.usable_since_ns = 0;
        member.down_reason = why;
    }
}

void ServiceGroups::on_service(const std::string& service, uint16_t source, bool up,
                               int64_t now_ns) {
    Member& member = groups_[service].members[source];
    member.listed_up = up;
    refresh_usable(member, !silent_.contains(source), now_ns, SwitchReason::kServiceDown);
}

void ServiceGroups::on_source_silent(uint16_t source, bool silent, int64_t now_ns) {
    if (silent) {
        silent_.insert(source);
    } else {
        silent_.erase(source);
    }
    for (auto& [name, group] : groups_) {
        const auto member = group.members.find(source);
        if (member == group.members.end()) continue;
        refresh_usable(member->second, !silent, now_ns, SwitchReason::kSourceSilent);
    }
}

// The member stays (a group that lost its standby must still show it) but is
// not usable until its new run's directory lists the service up again.
void ServiceGroups::on_source_reset(uint16_t source) {
    silent_.erase(source);
    for (auto& [name, group] : groups_) {
        const auto member = group.members.find(source);
        if (member == group.members.end()) continue;
        member->second.listed_up = false;
        refresh_usable(member->second, true, 0, SwitchReason::kSourceReset);
    }
}

std::optional<uint16_t> ServiceGroups::best_usable(const Group& group) const {
    std::optional<uint16_t> best;
    for (const auto& [source, member] : group.members) {
        if (usable(member) && (!best || rank_of(source) < rank_of(*best))) best = source;
    }
    return best;
}

// The switch this group needs now, if any (a first choice is no switch).
std::optional<GroupSwitch> ServiceGroups::due(const std::string& service, Group& group,
                                              int64_t now_ns) {
    const auto best = best_usable(group);
    if (!best || best == group.active) return std::nullopt;
    if (!group.active) {
        group.active = best;
        return std::nullopt;
    }
    const auto current = group.members.find(*group.active);
    if (current == group.members.end() || !usable(current->second)) {
        const SwitchReason why =
            current == group.members.end()
                ? SwitchReason::kSourceReset
                : current->second.down_reason.value_or(SwitchReason::kServiceDown);
        return GroupSwitch{service, *group.active, *best, why};
    }
    const Member& better = group.members.at(*best);
    if (rank_of(*best) > rank_of(*group.active) ||
        now_ns - better.usable_since_ns < hold_down_ns_) {
        return std::nullopt;
    }
    return GroupSwitch{service, *group.active, *best, SwitchReason::kPreferred};
}

std::vector<GroupSwitch> ServiceGroups::evaluate(int64_t now_ns) {
    std::vector<GroupSwitch> switches;
    for (auto& [service, group] : groups_) {
        auto change = due(service, group, now_ns);
        if (!change) continue;
        group.active = change->to;
        ++group.switches;
        group.last_switch = *change;
        group.last_switch_ns = now_ns;
        ++switch_counts_[index(change->reason)];
        switches.push_back(std::move(*change));
    }
    return switches;
}

bool ServiceGroups::listed_down(const std::string& service, uint16_t source) const {
    const auto group = groups_.find(service);
    if (group == groups_.end()) return true;
    const auto member = group->second.members.find(source);
    return member == group->second.members.end() || !member->second.listed_up;
}

std::optional<uint16_t> ServiceGroups::active(const std::string& service) const {
    const auto it = groups_.find(service);
    return it == groups_.end() ? std::nullopt : it->second.active;
}

std::vector<uint16_t> ServiceGroups::ranked(const std::string& service) const {
    const auto it = groups_.find(service);
    if (it == groups_.end()) return {};
    const Group& group = it->second;
    std::vector<uint16_t> order;
    for (const auto& [source, member] : group.members) order.push_back(source);
    // Active first, then usable before unusable, each by rank.
    std::sort(order.begin(), order.end(), [&](uint16_t a, uint16_t b) {
        const auto key = [&](uint16_t s) {
            return std::make_tuple(group.active != s, !usable(group.members.at(s)), rank_of(s));
        };
        return key(a) < key(b);
    });
    return order;
}

size_t ServiceGroups::standby_count(const Group& group) const {
    return static_cast<size_t>(std::count_if(
        group.members.begin(), group.members.end(),
        [&](const auto& entry) { return entry.first != group.active && usable(entry.second); }));
}

}  // namespace mdcast::server
