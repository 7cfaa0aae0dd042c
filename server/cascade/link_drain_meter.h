// The drain rate of a cascade link (bytes the kernel took per second), so a
// parent can bound the link's output queue by time, not memory: what the queue
// holds over the rate is how stale the edge is (output.link_max_delay_ms).
//
// Sampled on the server's housekeeping tick (every 100 ms), after the loop's
// writes: a window runs from one sample to the next. One whose samples all
// found bytes queued (the kernel took no more) was limited by the link: its
// rate is the link's, and moves the estimate halfway to it. One with an empty
// queue says only that the link carries at least that much (the feed was
// slower): the estimate keeps the larger. Pure: the caller passes the clock.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mdcast::server {

class LinkDrainMeter {
  public:
    // `now_ns`: a monotonic clock; `bytes_out`: written to the socket so far;
    // `queued_bytes`: waiting in the output queue now.
    void sample(int64_t now_ns, uint64_t bytes_out, size_t queued_bytes);
    // Bytes per second the link drains; 0 until a window was measured.
    double bytes_per_second() const { return rate_; }
    // What the queue may hold to be sent within `delay_ms` at that rate (at
    // least `floor_bytes`); `fallback_bytes` until a rate is known.
    uint64_t bound_bytes(uint32_t delay_ms, uint64_t floor_bytes, uint64_t fallback_bytes) const;

    static constexpr int64_t kWindowNs = 100'000'000;  // one housekeeping tick

  private:
    int64_t window_start_ns_ = 0;
    uint64_t window_start_bytes_ = 0;
    bool window_backlogged_ = false;  // the queue held bytes at every sample of the window
    double rate_ = 0;
};

}  // namespace mdcast::server
