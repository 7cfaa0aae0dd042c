#include "server/cascade/parent_subscriptions.h"

namespace mdcast::server {

bool ParentSubscriptions::want(const std::string& service, const std::string& item) {
    return wanted_.insert({service, item}).second;
}

uint64_t ParentSubscriptions::learn(uint64_t item_id, const std::string& service,
                                    const std::string& item) {
    Name name{service, item};
    uint64_t previous = 0;
    // A new id for a known name (its distributor restarted): the old id is void.
    if (const auto old = ids_.find(name); old != ids_.end() && old->second != item_id) {
        previous = old->second;
        names_.erase(previous);
    }
    ids_[name] = item_id;
    names_[item_id] = std::move(name);
    return previous;
}

std::optional<ParentSubscriptions::Name> ParentSubscriptions::drop(uint64_t item_id) {
    const auto name = names_.find(item_id);
    if (name == names_.end() || wanted_.erase(name->second) == 0) return std::nullopt;
    asked_.erase(name->second);  // wanted again later: asked again
    return name->second;
}

void ParentSubscriptions::drop(const std::string& service, const std::string& item) {
    wanted_.erase({service, item});
    asked_.erase({service, item});
}

void ParentSubscriptions::asked(const std::string& service, const std::string& item,
                                int64_t now_ns) {
    asked_.try_emplace({service, item}, now_ns);  // the first ask is the one answered
}

bool ParentSubscriptions::awaiting(const std::string& service, const std::string& item,
                                   int64_t now_ns, int64_t reask_after_ns) const {
    const auto asked = asked_.find({service, item});
    return asked != asked_.end() && now_ns - asked->second < reask_after_ns;
}

void ParentSubscriptions::answered(const std::string& service, const std::string& item) {
    asked_.erase({service, item});
}

std::optional<ParentSubscriptions::Name> ParentSubscriptions::name_of(uint64_t item_id) const {
    const auto name = names_.find(item_id);
    if (name == names_.end()) return std::nullopt;
    return name->second;
}

uint64_t ParentSubscriptions::id_of(const std::string& service, const std::string& item) const {
    const auto id = ids_.find({service, item});
    return id == ids_.end() ? 0 : id->second;
}

std::map<std::string, std::vector<std::string>> ParentSubscriptions::by_service() const {
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& name : wanted_) out[name.first].push_back(name.second);
    return out;
}

std::vector<uint64_t> ParentSubscriptions::known_ids() const {
    std::vector<uint64_t> out;
    for (const auto& name : wanted_) {
        if (const auto id = ids_.find(name); id != ids_.end()) out.push_back(id->second);
    }
    return out;
}

}  // namespace mdcast::server
