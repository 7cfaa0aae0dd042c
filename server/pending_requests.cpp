#include "server/pending_requests.h"

#include <algorithm>

namespace mdcast::server {

std::string PendingRequests::key(const std::string& service, const std::string& item) {
    return service + '\0' + item;
}

PendingRequests::AddResult PendingRequests::add(const std::string& service, const std::string& item,
                                                PendingSubscriber subscriber,
                                                PendingImage*& entry) {
    const std::string k = key(service, item);
    entry = nullptr;
    auto it = entries_.find(k);
    if (it != entries_.end()) {
        it->second.waiting.push_back(std::move(subscriber));
        entry = &it->second;
        return AddResult::kJoined;
    }
    if (entries_.size() >= max_pending_) return AddResult::kLimitReached;
    entry = &entries_[k];
    entry->service_name = service;
    entry->item_name = item;
    entry->waiting.push_back(std::move(subscriber));
    return AddResult::kFirst;
}

std::optional<PendingImage> PendingRequests::take(const std::string& service,
                                                  const std::string& item) {
    const auto it = entries_.find(key(service, item));
    if (it == entries_.end()) return std::nullopt;
    PendingImage entry = std::move(it->second);
    entries_.erase(it);
    return entry;
}

void PendingRequests::restore(PendingImage entry) {
    std::string k = key(entry.service_name, entry.item_name);
    auto [it, inserted] = entries_.try_emplace(std::move(k), std::move(entry));
    if (!inserted) {
        // Someone subscribed in between: merge the two waiting lists.
        auto& waiting = it->second.waiting;
        waiting.insert(waiting.end(), entry.waiting.begin(), entry.waiting.end());
        it->second.recovering = it->second.recovering || entry.recovering;
    }
}

void PendingRequests::remove_client(ClientSession* client) {
    for (auto it = entries_.begin(); it != entries_.end();) {
        std::erase_if(it->second.waiting,
                      [&](const PendingSubscriber& s) { return s.client == client; });
        it = it->second.waiting.empty() ? entries_.erase(it) : std::next(it);
    }
}

std::vector<PendingImage*> PendingRequests::overdue(int64_t now_ns, int64_t timeout_ns) {
    std::vector<PendingImage*> due;
    for (auto& [k, entry] : entries_) {
        if (now_ns - entry.last_request_ns >= timeout_ns) due.push_back(&entry);
    }
    return due;
}

std::vector<PendingImage*> PendingRequests::all() {
    std::vector<PendingImage*> entries;
    for (auto& [k, entry] : entries_) entries.push_back(&entry);
    return entries;
}

}  // namespace mdcast::server
