// How current each member of a redundancy group is ("standby sources and their
// lag", docs/operations.md "Redundancy"): per distributor's service (service
// id), the smoothed delay from the publisher's stamp to this server's receipt
// of its updates, and when the last one arrived. A standby whose feed or path
// has fallen behind shows a delay above the active member's; one that stopped
// publishing shows an old last update while its distributor is still heard.
//
// Fed from the update path with the stamped updates HopProbe samples (about
// one in four), so its cost is one hash look-up per sampled update. The delay
// mixes two hosts' CLOCK_REALTIME: across hosts it is as good as their clock
// synchronisation, and compares members with each other well either way.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

namespace mdcast::server {

class MemberLag {
  public:
    struct Lag {
        std::string service;         // the service's name
        double delay_ns = 0;         // smoothed publish stamp -> receipt
        int64_t last_update_ns = 0;  // monotonic time of the last sampled update
        uint64_t samples = 0;
    };

    // A sampled update of `service_id` (named `service`) stamped `publish_time_ns`
    // (CLOCK_REALTIME), received at `realtime_now_ns`, `monotonic_now_ns`.
    void note(uint32_t service_id, const std::string& service, uint64_t publish_time_ns,
              int64_t realtime_now_ns, int64_t monotonic_now_ns);
    // The lag of `service` as published through distributor `source`; nullptr
    // before its first sampled update.
    const Lag* find(uint16_t source, const std::string& service) const;

  private:
    std::unordered_map<uint32_t, Lag> by_service_id_;
};

}  // namespace mdcast::server
