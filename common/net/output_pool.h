// Server-wide budget for output queued to clients (the seed's
// guaranteedOutputBuffers / maxOutputBuffers / poolSize, in bytes).
//
// Every connection may always queue up to `guaranteed` bytes. Beyond that it
// borrows from one shared pool of `pool` bytes, up to `max` per connection. A
// connection that would pass its max, or needs the pool while it is exhausted,
// is refused: the owner applies its slow-consumer policy. So a few slow clients
// cannot take all the memory, and a burst on a fast client can still borrow.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace mdcast {

class OutputPool {
  public:
    OutputPool(size_t pool_bytes, size_t guaranteed_bytes, size_t max_bytes)
        : pool_(pool_bytes),
          guaranteed_(guaranteed_bytes),
          max_(std::max(max_bytes, guaranteed_bytes)) {}

    // May a connection with `queued` bytes add `bytes` more?
    bool admit(size_t queued, size_t bytes) const {
        const size_t after = queued + bytes;
        if (after > max_) return false;
        return borrowed_ - over(queued) + over(after) <= pool_;
    }
    // A connection's queue went from `before` to `after` bytes.
    void on_change(size_t before, size_t after) {
        borrowed_ = borrowed_ - over(before) + over(after);
        peak_borrowed_ = std::max(peak_borrowed_, borrowed_);
    }

    size_t borrowed() const { return borrowed_; }
    size_t peak_borrowed() const { return peak_borrowed_; }
    size_t pool() const { return pool_; }
    size_t guaranteed() const { return guaranteed_; }
    size_t max() const { return max_; }

  private:
    size_t over(size_t queued) const { return queued > guaranteed_ ? queued - guaranteed_ : 0; }

    size_t pool_;
    size_t guaranteed_;
    size_t max_;
    size_t borrowed_ = 0;
    size_t peak_borrowed_ = 0;
};

}  // namespace mdcast
