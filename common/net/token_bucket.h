// A token bucket for rate limits (bytes or packets per second). Pure: the
// caller passes the time, so tests drive it with a fake clock.
#pragma once

#include <algorithm>
#include <cstdint>

namespace mdcast {

class TokenBucket {
  public:
    // rate_per_s 0 means unlimited. `burst` is the bucket size.
    TokenBucket(uint64_t rate_per_s, uint64_t burst)
        : rate_(rate_per_s), burst_(burst), tokens_(burst) {}

    // Takes `amount` tokens if there are enough; false (and nothing taken) otherwise.
    bool try_take(uint64_t amount, int64_t now_ns) {
        if (rate_ == 0) return true;
        refill(now_ns);
        if (tokens_ < amount) return false;
        tokens_ -= amount;
        return true;
    }

    bool unlimited() const { return rate_ == 0; }

  private:
    void refill(int64_t now_ns) {
        if (last_ns_ == 0) last_ns_ = now_ns;
        const int64_t elapsed = now_ns - last_ns_;
        if (elapsed <= 0) return;
        const auto added =
            static_cast<uint64_t>(static_cast<double>(elapsed) * static_cast<double>(rate_) / 1e9);
        if (added == 0) return;  // keep last_ns_ so sub-token intervals accumulate
        tokens_ = std::min(burst_, tokens_ + added);
        last_ns_ = now_ns;
    }

    uint64_t rate_;
    uint64_t burst_;
    uint64_t tokens_;
    int64_t last_ns_ = 0;
};

}  // namespace mdcast
