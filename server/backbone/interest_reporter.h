// The interest room of the server: tells each distributor which items of its
// interactive (sink-driven) services this server still wants, so a source
// publishes an item only while some client somewhere holds it.
//
// Interest is a lease at the distributor (wire Interest, docs/sdk.md):
// an image request starts it; every proto::kInterestRenewMs the server renews
// every interactive item it has subscribers for; when the last subscriber here
// leaves (unsubscribe, disconnect, revoked entitlement) the server releases it
// at once. A lost release or a server that dies costs only the lease time.
//
// It keeps no list of held items of its own: the server passes what Fanout
// holds at each renewal. Holds and releases wait here until the next flush
// (the housekeeping tick); bounded by the cache's item limit, as each is an id
// of a cached item, queued once.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <unordered_set>
#include <vector>

#include "wire/backbone.pb.h"

namespace mdcast::server {

struct InterestCounters {
    uint64_t released = 0;  // item ids released (the last subscriber here left)
    uint64_t renewed = 0;   // item ids renewed
    uint64_t messages = 0;  // Interest messages queued for distributors
    uint64_t unsent = 0;    // messages a distributor could not be sent (control address unknown)
};

class InterestReporter {
  public:
    class Link {
      public:
        // Queues one Interest for a distributor (stamped with its epoch); false
        // when it cannot be sent now.
        virtual bool send_interest(uint16_t source, ::mdcast::wire::v1::Interest& interest) = 0;

      protected:
        virtual ~Link() = default;
    };

    explicit InterestReporter(Link& link) : link_(link) {}

    // The last subscriber here of an interactive item left.
    void release(uint64_t item_id);
    // An interactive item got its first subscriber here without asking upstream
    // (served from the cache): its lease starts with the next flush, not a
    // renewal up to a second later (the hold at the distributor may be shorter).
    void hold(uint64_t item_id) { holds_.insert(item_id); }
    // True at most once per proto::kInterestRenewMs: renew() is due.
    bool renewal_due(int64_t now_ns);
    // Renews every id in `held` (the interactive items with subscribers here).
    void renew(const std::vector<uint64_t>& held) { send(held, false); }
    // Sends the holds and releases queued (the housekeeping tick); a release
    // only for the items `held` says have no subscriber here again meanwhile.
    void flush(const std::function<bool(uint64_t)>& held);

    const InterestCounters& counters() const { return counters_; }
    size_t releases_waiting() const { return releases_.size(); }

  private:
    void send(const std::vector<uint64_t>& ids, bool released);

    Link& link_;
    std::unordered_set<uint64_t> releases_;
    std::unordered_set<uint64_t> holds_;
    int64_t last_renewal_ns_ = 0;
    InterestCounters counters_;
};

}  // namespace mdcast::server
