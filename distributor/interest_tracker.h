// Interest in the items of interactive (sink-driven) services: which items
// servers have asked for, so the distributor asks their source to publish
// them — once, however many servers ask — and asks again when the source comes
// back after going away.
//
// A server asks (ImageRequest) when a client subscribes to an item the server
// has no image of; the distributor answers from its image cache when it can,
// and otherwise, for an interactive service, forwards the request to the
// publisher that owns the service (docs/sdk.md, "Interactive services").
// Requests for the same item are forwarded at most once per
// kSourceRequestRetryMs while no image arrives. Pure bookkeeping: no clock, no
// sockets; bounded by the registry's item limit (only registered items enter).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace mdcast::distributor {

class InterestTracker {
  public:
    static constexpr int64_t kSourceRequestRetryMs = 5000;

    explicit InterestTracker(int64_t retry_ns = kSourceRequestRetryMs * 1'000'000)
        : retry_ns_(retry_ns) {}

    // A server wants the item and no image can be given. True when its source
    // is to be asked now: the first time, or no ask within the retry interval.
    bool should_request(uint64_t item_id, uint32_t service_id, int64_t now_ns);
    // The service's source (re)announced: every item wanted before must be
    // asked for again. Returns them and records the ask.
    std::vector<uint64_t> rerequest_service(uint32_t service_id, int64_t now_ns);

    size_t size() const { return items_.size(); }

  private:
    struct Interest {
        uint32_t service_id = 0;
        int64_t last_request_ns = 0;
    };
    int64_t retry_ns_;
    std::unordered_map<uint64_t, Interest> items_;
};

}  // namespace mdcast::distributor
