#include "server/redundancy/member_lag.h"

#include "proto/source_ids.h"

namespace mdcast::server {

namespace {

// Each sample moves the smoothed delay by a sixteenth of its difference: a few
// hundred updates of the service make a new level, one outlier barely moves it.
constexpr double kWeight = 1.0 / 16;

}  // namespace

void MemberLag::note(uint32_t service_id, const std::string& service, uint64_t publish_time_ns,
                     int64_t realtime_now_ns, int64_t monotonic_now_ns) {
    Lag& lag = by_service_id_[service_id];
    const double delay =
        static_cast<double>(realtime_now_ns - static_cast<int64_t>(publish_time_ns));
    if (lag.samples++ == 0) {
        lag.service = service;
        lag.delay_ns = delay;
    } else {
        lag.delay_ns += kWeight * (delay - lag.delay_ns);
    }
    lag.last_update_ns = monotonic_now_ns;
}

const MemberLag::Lag* MemberLag::find(uint16_t source, const std::string& service) const {
    for (const auto& [service_id, lag] : by_service_id_) {
        if (proto::service_source(service_id) == source && lag.service == service) return &lag;
    }
    return nullptr;
}

}  // namespace mdcast::server
