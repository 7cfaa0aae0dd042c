// The interest-leases room of the distributor: which servers want which items
// of interactive (sink-driven) services, and what their sources are told.
//
// Rules (the bookkeeping itself is InterestTracker's, distributor/interest_tracker.h):
//  - only registered items of interactive services take a lease, and a server
//    renews or releases only its own leases (keyed by ServerId, never by an
//    address: distributor/backbone_out.h);
//  - an item without an image is asked of its source once per retry interval
//    however many servers want it, registered first when nobody named it before;
//  - an Interest of another epoch (a server not yet past this distributor's
//    restart) names other items and is ignored, counted;
//  - a source that (re)announces its service is asked again for every item
//    still wanted, so the subscribers get fresh images;
//  - items nobody has wanted for interactive.release_hold_ms are dropped: their
//    source is told to stop (one Unsubscribe per source) and the servers are
//    told their image is no longer current (an ItemStatus on the backbone), so
//    the next subscriber anywhere gets a fresh image from the source;
//  - a name registered because a server asked for it is "awaiting" until its
//    source gives it an image. Awaiting names are bounded per service
//    (interactive.max_awaiting_per_service) and in all
//    (interactive.max_awaiting_items): a name beyond them is refused
//    LIMIT_REACHED to the asking server alone and never registered. A dropped
//    item that never got an image (never answered, or closed by its source) is
//    released from the registry: a flood of names cannot fill it for good;
//  - only the asking server hears that a new name is being asked for; the
//    backbone carries an item's "waiting for the source" status at most once
//    per source request, not once per server request.
//
// The room never touches a publisher connection: sources are reached through
// the Link, servers through BackboneOut.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/logging.h"
#include "common/metrics.h"
#include "distributor/backbone_out.h"
#include "distributor/interest_tracker.h"
#include "distributor/item_registry.h"

namespace mdcast::distributor {

class InterestLeases {
  public:
    // The publishers, as the room sees them.
    class Link {
      public:
        // True when the service's source is connected and can be asked.
        virtual bool source_connected(const ServiceEntry& service) = 0;
        // Asks the service's source to publish `item` (when it is connected).
        virtual void request_from_source(const ServiceEntry& service, const ItemEntry& item) = 0;
        // Tells publisher connection `session` to stop these items; false when
        // the connection is gone (nothing to stop).
        virtual bool unsubscribe_at_source(uint64_t session,
                                           const std::vector<uint64_t>& item_ids) = 0;

      protected:
        virtual ~Link() = default;
    };

    InterestLeases(const InterestTracker::Settings& settings, ItemRegistry& registry,
                   BackboneOut& backbone, Link& link);

    // `server` was sent the image of an interactive item: its lease is renewed.
    void on_image_served(const ItemEntry& item, ServerId server, int64_t now);
    // `server` wants an item of interactive `service` that has no image to
    // give: the source is asked (see the rules). Returns the item, registered
    // if it was new; nullptr when the name is invalid or nothing is known and
    // no source is connected to ask.
    // `refusal` is set (and no item given) when the name is over the
    // awaiting bounds.
    SourceAsk ask_source(const ServiceEntry& service, ItemEntry* item, const std::string& name,
                         ServerId server, int64_t now);
    // A server's renewals and releases (wire Interest).
    void on_interest(const wire::Interest& interest, ServerId server, int64_t now);
    // The service's source (re)announced it.
    void on_service_announced(const ServiceEntry& service, int64_t now);
    // Periodic: ends leases not renewed and drops the items nobody wants.
    void tick(int64_t now);

    // Servers holding a lease on the item (0: unknown, or held without one).
    size_t holders(uint64_t item_id) const { return tracker_.holders(item_id); }
    void register_metrics(MetricsRegistry& metrics) const;

  private:
    void renew(uint64_t item_id, ServerId server, int64_t now);
    // Nullptr with `refusal` set when the awaiting bounds are reached.
    ItemEntry* register_awaiting(const ServiceEntry& service, const std::string& name,
                                 std::string& refusal);
    // Forgets awaiting items that have an image now, or are gone.
    void prune_awaiting();
    void refuse_awaiting(const ServiceEntry& service, std::string& refusal);
    void tell_servers_unwanted(const ItemEntry& item, const ServiceEntry& service);

    InterestTracker tracker_;
    InterestTracker::Settings settings_;
    ItemRegistry& registry_;
    BackboneOut& backbone_;
    Link& link_;
    uint64_t unsubscribes_sent_ = 0;  // items their source was told to stop
    uint64_t other_epoch_ = 0;        // Interest messages for another epoch: ignored
    std::unordered_map<uint32_t, std::unordered_set<uint64_t>> awaiting_;  // by service
    size_t awaiting_count_ = 0;
    uint64_t awaiting_refused_ = 0;  // names refused over the awaiting bounds
    uint64_t released_ = 0;          // items released from the registry
    std::shared_ptr<spdlog::logger> log_;
};

}  // namespace mdcast::distributor
