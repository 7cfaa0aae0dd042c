// The images a standby publisher held until it became active (docs/operations.md,
// "Standby publishers on one distributor"). At a switch the registry takes the
// values it needs; the standby's own 100,000 images are then garbage, and
// freeing them in the switch cost 4.7 ms, paid before the switch's last packet
// left. They are freed here instead, in slices on later loop passes, so the
// switch's packets go first and no pass stalls other publishers for long.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>

#include "common/net/event_loop.h"
#include "distributor/publisher_group.h"

namespace mdcast::distributor {

class RetiredImages {
  public:
    using Items = std::unordered_map<uint64_t, StandbyItem>;

    // `per_slice` images are freed per pass, a pass every `pause`.
    RetiredImages(EventLoop& loop, size_t per_slice = 10'000,
                  std::chrono::microseconds pause = std::chrono::microseconds(200));
    RetiredImages(const RetiredImages&) = delete;
    RetiredImages& operator=(const RetiredImages&) = delete;

    // Takes `items` (left empty) to free later.
    void retire(Items& items);
    // Images not freed yet (a gauge).
    size_t waiting() const { return waiting_; }

  private:
    void free_slice();

    std::deque<Items> queue_;
    size_t waiting_ = 0;
    size_t per_slice_;
    std::chrono::microseconds pause_;
    Timer timer_;
};

}  // namespace mdcast::distributor
