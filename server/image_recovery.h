// The image-recovery room of the server: getting images from upstream.
//
// Two kinds of request, both retried every backbone.image_request_timeout_ms
// until an image arrives:
//  - by name (PendingRequests): a subscription or snapshot for an item the
//    server has no image of, routed to the distributor whose directory lists
//    the service; its subscribers wait and are told if it drags on or fails;
//  - by id (the recovering set): a subscribed item that went suspect (loss,
//    item gap, silence) and needs a fresh image.
// It also keeps the services each distributor's directory lists (to route by
// name), and forgets a distributor's state when it resets.
//
// Recovery never sends to clients or changes subscriptions itself: what a
// waiting subscriber must be told goes through the Link, and the server serves
// the subscribers an arriving image was waited for by.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/logging.h"
#include "server/item_cache.h"
#include "server/pending_requests.h"
#include "wire/backbone.pb.h"
#include "wire/client.pb.h"

namespace mdcast::server {

struct ImageRecoveryCounters {
    uint64_t waiting_for_source = 0;      // requests told "no source yet" (then imaged)
    uint64_t client_limit_refusals = 0;   // over cache.max_pending_requests_per_client
    uint64_t service_limit_refusals = 0;  // over cache.max_pending_requests_per_service
    uint64_t table_limit_refusals = 0;    // over cache.max_pending_requests
};

class ImageRecovery {
  public:
    // The rest of the server, as recovery sees it.
    class Link {
      public:
        // Queues an image request for a distributor; false when it cannot be
        // asked yet (the upstream does not know where it is).
        virtual bool send_image_request(uint16_t source, const wire::ImageRequest& request) = 0;
        // Every distributor the upstream has heard.
        virtual std::vector<uint16_t> upstream_sources() const = 0;
        // The distributor a service's names are asked of when several list it
        // (its redundancy group's active member); none: the first listing it.
        virtual std::optional<uint16_t> active_source(const std::string&) const {
            return std::nullopt;
        }
        // Tells one subscriber waiting by name what became of its request.
        virtual void tell_waiting(const PendingSubscriber& waiting, const std::string& service,
                                  const std::string& name, uint64_t item_id,
                                  const wire::Status& status) = 0;

      protected:
        virtual ~Link() = default;
    };

    struct Settings {
        size_t max_pending = 0;             // cache.max_pending_requests
        int64_t request_timeout_ns = 0;     // backbone.image_request_timeout_ms
        size_t max_pending_per_client = 0;  // cache.max_pending_requests_per_client
        // cache.max_pending_requests_per_service (by default no bound of its own)
        size_t max_pending_per_service = SIZE_MAX;
    };

    ImageRecovery(const ItemCache& cache, const Settings& settings, Link& link);

    // ---- asking ----
    // Waits for the image of (service, name), asking the distributor of its service
    // (once per name: later subscribers join). Refused with limit_reached when
    // max_pending names wait already, or this client waits for
    // max_pending_per_client, or max_pending_per_service names of the service
    // wait (each refusal counted, logged at the 1st, 2nd, 4th ...); closed not_found when every
    // distributor sent its directory and none lists the service; told open/suspect "no source yet"
    // while nothing upstream can be asked.
    void wait_by_name(const std::string& service, const std::string& name,
                      PendingSubscriber subscriber);
    // Cache off: the item is live but its image is upstream; waits by name and
    // asks for the image by id.
    void wait_for_image(const CachedItem& item, PendingSubscriber subscriber);
    // A subscribed item needs a fresh image: asks by id until one arrives.
    void request_image(const CachedItem& item);
    void retry_all_now();  // the next timer round asks again for every name waiting

    // ---- answers from upstream ----
    // An image of the item arrived (applied or redundant): returns who waited for it by name.
    std::optional<PendingImage> image_arrived(const CachedItem& item);
    // Upstream's status for a name: a closed stream ends the wait of its subscribers.
    void status_arrived(const wire::ItemStatus& status);
    // The item's stream closed: no more image requests for it.
    void item_closed(uint64_t item_id) { recovering_.erase(item_id); }

    // ---- the distributors ----
    struct DirectoryChange {
        std::vector<wire::ServiceInfo> went_down;  // services that were up (or unknown)
        uint64_t foreign = 0;                      // services of another distributor's id: ignored
    };
    // A distributor's directory: recorded, and names waiting for it are routed.
    DirectoryChange on_directory(uint16_t source, const wire::Directory& directory);
    // A distributor reset (or was first heard): its directory and its items' ids
    // are void.
    void forget_source(uint16_t source);
    // After a reset, an item's subscriber waits by name for the restarted source's
    // image; "not found" meanwhile does not close it. Limit reached: told so.
    void resubscribe(const CachedItem& item, PendingSubscriber subscriber);
    // A silent distributor is heard again: nothing says what was missed, so the
    // subscribed items among `subscribed` that are its own get fresh images.
    void on_source_heard_again(uint16_t source, const std::vector<uint64_t>& subscribed);
    // The distributor whose directory lists `service` (up or down), if any.
    std::optional<uint16_t> service_source(const std::string& service) const;
    bool has_directory(uint16_t source) const { return sources_with_directory_.contains(source); }
    const std::unordered_map<uint32_t, wire::ServiceInfo>& directory() const { return directory_; }

    // Retries what is overdue; tells subscribers waiting since two attempts that
    // the image is still being asked for.
    void on_timer(int64_t now_ns);
    // The client is gone: it waits for nothing any more.
    void remove_client(ClientSession* client) { pending_.remove_client(client); }

    size_t pending_count() const { return pending_.size(); }
    const ImageRecoveryCounters& counters() const { return counters_; }
    size_t recovering_count() const { return recovering_.size(); }
    bool recovering(uint64_t item_id) const { return recovering_.contains(item_id); }

  private:
    enum class Route { kSent, kWaiting, kNoSuchService };
    Route route(PendingImage& pending);
    void route(const std::vector<PendingImage*>& entries);
    void close_unroutable(const std::string& service, const std::string& name);
    void tell_no_source_yet(const PendingSubscriber& subscriber, const std::string& service,
                            const std::string& name);
    bool send_by_id(uint64_t item_id, uint32_t service_id);
    void refuse_full(const PendingSubscriber& subscriber, const std::string& service,
                     const std::string& name, uint64_t item_id, const std::string& when,
                     PendingRequests::AddResult why = PendingRequests::AddResult::kLimitReached);
    std::string pending_limit_text(const std::string& service,
                                   PendingRequests::AddResult why) const;
    // Counts a refusal under its limit; returns how many that limit refused.
    uint64_t count_refusal(PendingRequests::AddResult why);

    const ItemCache& cache_;
    Settings settings_;
    Link& link_;
    PendingRequests pending_;
    std::unordered_set<uint64_t> recovering_;  // subscribed items waiting for an image
    int64_t last_recovery_request_ns_ = 0;
    std::unordered_map<uint32_t, wire::ServiceInfo> directory_;  // by service id
    std::set<uint16_t> sources_with_directory_;
    // Service names any directory has listed since start: a request for one of
    // them waits for it to come back (a distributor or publisher restarting)
    // instead of being closed "no such service". Bounded: directories are few.
    std::unordered_set<std::string> services_seen_;
    static constexpr size_t kMaxServicesSeen = 4096;
    ImageRecoveryCounters counters_;
    std::shared_ptr<spdlog::logger> log_;
};

}  // namespace mdcast::server
