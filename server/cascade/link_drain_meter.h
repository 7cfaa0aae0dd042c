// The drain rate of a cascade link (bytes the kernel took per second), so a
// parent can bound the link's output queue by time, not memory: what the queue
// holds over the rate is how stale the edge is (output.link_max_delay_ms).
//
// Sampled on the server's housekeeping tick (every 100 ms), after the loop's
// writes. The rate is measured over the last second of samples, not one tick:
// a slow path takes bytes in bursts (a small receive window opens, a few KB
// go, then nothing for a few hundred milliseconds), and one tick's figure
// swung between nothing and ten times the link's rate. Where the samples of
// the last 300 ms or more all found bytes waiting (in the queue, or unsent in
// the kernel), the link was the limit: the rate over that run is the link's.
// Otherwise the feed was the limit, and the link carries at least the rate
// seen: the estimate keeps the larger. Where the kernel tells the
// connection's progress (TCP_INFO), bytes the peer acknowledged are counted
// rather than bytes the socket took. Pure: the caller passes the clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

#include "common/net/tcp_progress.h"

namespace mdcast::server {

class LinkDrainMeter {
  public:
    // `now_ns`: a monotonic clock; `bytes_out`: written to the socket so far;
    // `queued_bytes`: waiting in the output queue now.
    // `kernel`: the socket's progress, when the kernel tells it.
    void sample(int64_t now_ns, uint64_t bytes_out, size_t queued_bytes,
                std::optional<TcpProgress> kernel = std::nullopt);
    // Bytes per second the link drains; 0 until a window was measured.
    double bytes_per_second() const { return rate_; }
    // What the queue may hold to be sent within `delay_ms` at that rate (at
    // least `floor_bytes`); `fallback_bytes` until a rate is known.
    uint64_t bound_bytes(uint32_t delay_ms, uint64_t floor_bytes, uint64_t fallback_bytes) const;

    static constexpr int64_t kWindowNs = 100'000'000;   // one housekeeping tick
    static constexpr int64_t kSpanNs = 1'000'000'000;   // the rate is measured over this
    static constexpr int64_t kLimitedNs = 300'000'000;  // a backlog this long: the link's rate

  private:
    struct Sample {
        int64_t at_ns;
        uint64_t bytes;
        bool backlogged;
    };
    std::deque<Sample> samples_;  // the last kSpanNs, and one before
    double rate_ = 0;
};

}  // namespace mdcast::server
