// Clocks. Latency stamps use CLOCK_REALTIME so publisher and client on different
// hosts can compare (with PTP/NTP-synchronised clocks); intervals use CLOCK_MONOTONIC.
#pragma once

#include <cstdint>

namespace mdcast {

int64_t realtime_ns();
int64_t monotonic_ns();

}  // namespace mdcast
