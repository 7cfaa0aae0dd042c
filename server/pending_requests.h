// Subscriptions waiting for an item's first image from upstream, keyed by
// (service, item name), with the retry bookkeeping of the image request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace mdcast::server {

class ClientSession;

struct PendingSubscriber {
    ClientSession* client;
    bool snapshot;
    std::vector<uint32_t> view;
    uint32_t conflate_ms = 0;  // Subscribe.conflate_ms (0: every update)
};

struct PendingImage {
    std::string service_name;
    std::string item_name;
    std::vector<PendingSubscriber> waiting;
    int64_t last_request_ns = 0;
    uint32_t attempts = 0;
    bool told_recovering = false;  // subscribers already told "still waiting"
    // Subscriptions being restored after a source reset: "not found" from a
    // distributor whose source has not re-registered yet must not close them;
    // they wait (suspect) for the source's refresh.
    bool recovering = false;
};

class PendingRequests {
  public:
    explicit PendingRequests(size_t max_pending) : max_pending_(max_pending) {}

    enum class AddResult { kFirst, kJoined, kLimitReached };
    // kFirst: nobody was waiting for this name, so the caller sends the request
    // for `entry`. `entry` is null on kLimitReached.
    AddResult add(const std::string& service, const std::string& item, PendingSubscriber subscriber,
                  PendingImage*& entry);
    // Puts back an entry taken with take() (it keeps waiting).
    void restore(PendingImage entry);
    std::optional<PendingImage> take(const std::string& service, const std::string& item);
    void remove_client(ClientSession* client);
    // Entries whose last request is older than `timeout_ns`.
    std::vector<PendingImage*> overdue(int64_t now_ns, int64_t timeout_ns);
    std::vector<PendingImage*> all();
    size_t size() const { return entries_.size(); }

  private:
    static std::string key(const std::string& service, const std::string& item);
    size_t max_pending_;
    std::unordered_map<std::string, PendingImage> entries_;
};

}  // namespace mdcast::server
