// Subscriptions waiting for an item's first image from upstream, keyed by
// (service, item name), with the retry bookkeeping of the image request.
//
// Bounded in all (cache.max_pending_requests), per client connection
// (cache.max_pending_requests_per_client, well below the total) and per
// service (cache.max_pending_requests_per_service, names of one service): one
// client asking for many names nobody answers fills its own share, and many
// such clients on one silent service fill that service's share, never the
// table every other client and service needs. Unanswered requests are retried at the timeout,
// then at twice, four times ... up to kMaxBackoff times it, so names that are
// never answered cost upstream less and less.
#pragma once

#include <cstddef>
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
    // `max_per_service` bounds the names of one service (no bound of its own
    // by default: the table's).
    PendingRequests(size_t max_pending, size_t max_per_client, size_t max_per_service = SIZE_MAX)
        : max_pending_(max_pending),
          max_per_client_(max_per_client),
          max_per_service_(max_per_service) {}

    static constexpr uint32_t kMaxBackoff = 16;  // times the request timeout

    enum class AddResult {
        kFirst,
        kJoined,
        kLimitReached,
        kClientLimitReached,
        kServiceLimitReached
    };
    // kFirst: nobody was waiting for this name, so the caller sends the request
    // for `entry`. `entry` is null on every k*LimitReached. A join is refused
    // only over the client's share (it adds no name).
    AddResult add(const std::string& service, const std::string& item, PendingSubscriber subscriber,
                  PendingImage*& entry);
    // Puts back an entry taken with take() (it keeps waiting).
    void restore(PendingImage entry);
    std::optional<PendingImage> take(const std::string& service, const std::string& item);
    void remove_client(ClientSession* client);
    // Entries whose last request is older than `timeout_ns`, times the
    // entry's backoff (doubling with each attempt after the first, at most
    // kMaxBackoff).
    std::vector<PendingImage*> overdue(int64_t now_ns, int64_t timeout_ns);
    std::vector<PendingImage*> all();
    size_t size() const { return entries_.size(); }
    size_t max_per_client() const { return max_per_client_; }
    size_t max_per_service() const { return max_per_service_; }

  private:
    static std::string key(const std::string& service, const std::string& item);
    void count(const PendingImage& entry, int sign);
    void count_name(const std::string& service, int sign);
    size_t max_pending_;
    size_t max_per_client_;
    size_t max_per_service_;
    std::unordered_map<const ClientSession*, size_t> per_client_;  // subscriptions waiting
    std::unordered_map<std::string, size_t> per_service_;          // names waiting
    std::unordered_map<std::string, PendingImage> entries_;
};

}  // namespace mdcast::server
