// Interest in the items of interactive (sink-driven) services: which servers
// want which items, so the distributor asks their source to publish an item
// once, however many servers ask, asks again when the source comes back, and
// tells the source when nobody wants the item any more.
//
// A server asks (ImageRequest) when a client subscribes to an item the server
// has no image of; the distributor answers from its image cache when it can,
// and otherwise, for an interactive service, forwards the request to the
// publisher that owns the service (docs/sdk.md, "Interactive services").
// Requests for the same item are forwarded at most once per
// kSourceRequestRetryMs while no image arrives.
//
// Interest is a lease per (item, server): an image request or a renewal
// (wire Interest.held_item_ids, every proto::kInterestRenewMs) starts or
// extends it for lease_ns; a release (Interest.released_item_ids) ends it; a
// lease not renewed in time expires (a lost datagram, a server killed). Once an
// item has no lease left it is held for hold_ns (a client unsubscribing and
// subscribing again at once must not flap the source), then dropped: expire()
// returns it so the distributor sends the source Unsubscribe, and a later
// request asks the source afresh. A server is its ServerId (the random
// server_id of its control messages, distributor/backbone_out.h), so one
// server cannot release another's interest.
//
// Pure bookkeeping: no clock, no sockets. Bounded: only registered items enter
// (registry.max_items) and an item has at most kMaxServersPerItem leases.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace mdcast::distributor {

struct InterestCounters {
    uint64_t renewals = 0;        // held ids that renewed or started a lease
    uint64_t releases = 0;        // released ids that ended a lease
    uint64_t leases_expired = 0;  // leases not renewed within the lease time
    uint64_t items_dropped = 0;   // items nobody wants any more (source told)
    uint64_t refused = 0;         // leases refused: kMaxServersPerItem reached
};

class InterestTracker {
  public:
    static constexpr int64_t kSourceRequestRetryMs = 5000;
    // Servers (server instances on every host) holding one item at once. A
    // hostile peer sending under many ids or ports cannot grow an item beyond it.
    static constexpr size_t kMaxServersPerItem = 256;

    struct Settings {
        int64_t retry_ns = kSourceRequestRetryMs * 1'000'000;
        int64_t lease_ns = 10'000'000'000;  // interactive.interest_lease_ms
        int64_t hold_ns = 3'000'000'000;    // interactive.release_hold_ms
        // Bounds on names asked for and not yet answered (interest_leases.h).
        uint32_t max_awaiting_per_service = 50000;  // interactive.max_awaiting_per_service
        uint64_t max_awaiting_items = 200000;       // interactive.max_awaiting_items
    };
    struct Dropped {
        uint64_t item_id;
        uint32_t service_id;
    };

    explicit InterestTracker(const Settings& settings) : settings_(settings) {}

    // `server` wants the item and no image can be given (it holds a lease from
    // now). True when its source is to be asked now: the first time, or no ask
    // within the retry interval. False as well when the lease is refused.
    bool should_request(uint64_t item_id, uint32_t service_id, uint64_t server, int64_t now_ns);
    // `server` still wants the item (a renewal, or an image request answered
    // from the cache). True when the item was not wanted before (new, or
    // dropped since): the caller asks its source.
    bool renew(uint64_t item_id, uint32_t service_id, uint64_t server, int64_t now_ns);
    // `server` wants the item no more; anyone else's lease is untouched.
    void release(uint64_t item_id, uint64_t server, int64_t now_ns);
    // Ends the leases not renewed in time and drops the items held without a
    // lease for hold_ns: returned, forgotten here, to be unsubscribed.
    std::vector<Dropped> expire(int64_t now_ns);
    // The item's stream is finished (closed by its source): forgotten.
    void forget(uint64_t item_id) { items_.erase(item_id); }
    // The service's source (re)announced: every item still wanted must be asked
    // for again. Returns them and records the ask.
    std::vector<uint64_t> rerequest_service(uint32_t service_id, int64_t now_ns);

    size_t size() const { return items_.size(); }
    size_t lease_count() const;
    // Servers holding a lease on the item (0: unknown or held without one).
    size_t holders(uint64_t item_id) const;
    const InterestCounters& counters() const { return counters_; }

  private:
    struct Lease {
        uint64_t server;
        int64_t expires_ns;
    };
    struct Interest {
        uint32_t service_id = 0;
        int64_t last_request_ns = 0;
        std::vector<Lease> leases;
        int64_t unwanted_since_ns = 0;  // when the last lease ended (leases empty)
    };
    enum class Hold { kNew, kRenewed, kRefused };
    Hold hold(uint64_t item_id, uint32_t service_id, uint64_t server, int64_t now_ns,
              Interest*& interest);

    Settings settings_;
    std::unordered_map<uint64_t, Interest> items_;
    InterestCounters counters_;
};

}  // namespace mdcast::distributor
