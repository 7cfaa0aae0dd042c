// Deliberate packet loss for tests (like Aeron's loss generators): seeded
// random loss and periodic bursts ("many gaps"), applied to one direction of
// one socket. Built into the daemons but only active when a `testing.loss.*`
// key is set; the daemon then logs a loud warning at start.
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace mdcast {

struct LossSettings {
    double rate = 0;            // probability of dropping each packet, 0..1
    uint64_t burst_every = 0;   // every N packets ...
    uint64_t burst_length = 0;  // ... drop this many in a row (0: no bursts)
    uint64_t seed = 1;
    double duplicate_rate = 0;  // receive side: also deliver the packet a second time
    double reorder_rate = 0;    // receive side: deliver the packet after the next one

    bool active() const {
        return rate > 0 || (burst_every > 0 && burst_length > 0) || duplicate_rate > 0 ||
               reorder_rate > 0;
    }
    std::string describe() const;
};

class LossInjector {
  public:
    explicit LossInjector(const LossSettings& settings)
        : settings_(settings), random_(settings.seed) {}

    // True when this packet is to be dropped.
    bool drop();
    // Receive side: true when this packet is to be delivered twice / held back one packet.
    bool duplicate() { return chance(settings_.duplicate_rate); }
    bool reorder() { return chance(settings_.reorder_rate); }
    bool active() const { return settings_.active(); }
    uint64_t dropped() const { return dropped_; }

  private:
    bool chance(double rate) { return rate > 0 && uniform_(random_) < rate; }

    LossSettings settings_;
    std::mt19937_64 random_;
    std::uniform_real_distribution<double> uniform_{0.0, 1.0};
    uint64_t seen_ = 0;
    uint64_t dropped_ = 0;
};

}  // namespace mdcast
