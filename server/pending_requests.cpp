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
    if (subscriber.client) {
        const auto counted = per_client_.find(subscriber.client);
        if (counted != per_client_.end() && counted->second >= max_per_client_) {
            return AddResult::kClientLimitReached;
        }
    }
    auto it = entries_.find(k);
    if (it != entries_.end()) {
        if (subscriber.client) ++per_client_[subscriber.client];
        it->second.waiting.push_back(std::move(subscriber));
        entry = &it->second;
        return AddResult::kJoined;
    }
    if (entries_.size() >= max_pending_) return AddResult::kLimitReached;
    const auto names = per_service_.find(service);
    if ((names == per_service_.end() ? 0 : names->second) >= max_per_service_) {
        return AddResult::kServiceLimitReached;
    }
    if (subscriber.client) ++per_client_[subscriber.client];
    count_name(service, +1);
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
    count(entry, -1);
    count_name(entry.service_name, -1);
    return entry;
}

void PendingRequests::count_name(const std::string& service, int sign) {
    if (sign > 0) {
        ++per_service_[service];
    } else if (auto it = per_service_.find(service);
               it != per_service_.end() && --it->second == 0) {
        per_service_.erase(it);
    }
}

void PendingRequests::count(const PendingImage& entry, int sign) {
    for (const PendingSubscriber& s : entry.waiting) {
        if (!s.client) continue;
        if (sign > 0) {
            ++per_client_[s.client];
        } else if (auto it = per_client_.find(s.client);
                   it != per_client_.end() && --it->second == 0) {
            per_client_.erase(it);
        }
    }
}

void PendingRequests::restore(PendingImage entry) {
    count(entry, +1);
    std::string k = key(entry.service_name, entry.item_name);
    auto [it, inserted] = entries_.try_emplace(std::move(k), std::move(entry));
    if (inserted) {
        count_name(it->second.service_name, +1);
        return;
    }
    // Someone subscribed in between: merge the two waiting lists.
    auto& waiting = it->second.waiting;
    waiting.insert(waiting.end(), entry.waiting.begin(), entry.waiting.end());
    it->second.recovering = it->second.recovering || entry.recovering;
}

void PendingRequests::remove_client(ClientSession* client) {
    per_client_.erase(client);
    for (auto it = entries_.begin(); it != entries_.end();) {
        std::erase_if(it->second.waiting,
                      [&](const PendingSubscriber& s) { return s.client == client; });
        if (!it->second.waiting.empty()) {
            ++it;
            continue;
        }
        count_name(it->second.service_name, -1);
        it = entries_.erase(it);
    }
}

std::vector<PendingImage*> PendingRequests::overdue(int64_t now_ns, int64_t timeout_ns) {
    std::vector<PendingImage*> due;
    for (auto& [k, entry] : entries_) {
        const uint32_t doublings = entry.attempts > 1 ? entry.attempts - 1 : 0;
        const int64_t backoff =
            std::min<int64_t>(int64_t{1} << std::min<uint32_t>(doublings, 8), kMaxBackoff);
        if (now_ns - entry.last_request_ns >= timeout_ns * backoff) due.push_back(&entry);
    }
    return due;
}

std::vector<PendingImage*> PendingRequests::all() {
    std::vector<PendingImage*> entries;
    for (auto& [k, entry] : entries_) entries.push_back(&entry);
    return entries;
}

}  // namespace mdcast::server
