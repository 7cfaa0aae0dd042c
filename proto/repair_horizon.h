// How long a server keeps asking for a lost backbone packet before it declares
// it unrecoverable: the first NAK after a random wait of up to
// backbone.nak_backoff_max_us, then one every backbone.nak_retry_us, doubling
// with each attempt up to 128 times it (server/backbone/loss_recovery.cpp),
// backbone.nak_max_attempts in all. A distributor's retransmit window must
// hold its datagrams at least this long (its backbone.repair_horizon_ms), or
// it promises repairs it cannot make.
#pragma once

#include <algorithm>
#include <cstdint>

namespace mdcast::proto {

inline constexpr uint32_t kMaxNakRetryDoublings = 7;  // x128

constexpr uint64_t repair_horizon_us(uint32_t nak_backoff_max_us, uint32_t nak_retry_us,
                                     uint32_t nak_max_attempts) {
    uint64_t total = nak_backoff_max_us;
    for (uint32_t attempt = 0; attempt < nak_max_attempts; ++attempt) {
        total += uint64_t{nak_retry_us} << std::min(attempt, kMaxNakRetryDoublings);
    }
    return total;
}

// The servers' default NAK settings (etc/server.yaml) ask for about 1.8 s.
static_assert(repair_horizon_us(300, 1000, 20) == 1'791'300);

}  // namespace mdcast::proto
