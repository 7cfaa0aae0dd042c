// Whether the publishing thread should write a plain update itself or leave it
// to the I/O thread so that it coalesces with the next ones (natural batching
// for a publisher that calls update() in a tight loop; docs/sdk-performance.md).
//
// A write takes a while (on loopback the send runs the distributor's receive:
// 2-20 µs). An update published sooner after the last write than that write
// took would, had the publishing thread not written itself, have found that
// write still in flight and joined the next one: the application publishes
// faster than one write per update can follow. Then the I/O thread takes over,
// and everything published while it writes goes out in its next write. Once
// the application pauses for longer than a write, the publishing thread writes
// at once again, so a lone update never waits for a wake-up.
//
// The I/O thread's rounds count as writes too, so a stream it is coalescing
// stays with it. Used under the publisher's core lock; no clock of its own.
#pragma once

#include <cstdint>

namespace mdcast::sdk {

class CallerWriteGate {
  public:
    // A write (or an I/O thread round that ends in one) from start_ns to end_ns.
    void wrote(int64_t start_ns, int64_t end_ns) {
        last_end_ns_ = end_ns;
        last_duration_ns_ = end_ns > start_ns ? end_ns - start_ns : 0;
    }
    // True when an update at now_ns would have joined the last write had it
    // still been in flight: leave it to the I/O thread.
    bool coalescing(int64_t now_ns) const {
        return last_duration_ns_ > 0 && now_ns - last_end_ns_ < last_duration_ns_;
    }

  private:
    int64_t last_end_ns_ = 0;
    int64_t last_duration_ns_ = 0;
};

}  // namespace mdcast::sdk
