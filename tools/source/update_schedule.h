// Paced publishing in the style of lbmpubload: at every tick, send what is owed
// by now at the target rate, so a late tick does not lower the rate; the owed
// amount is capped per tick so a long stall does not become a burst that
// swamps the receivers, and the shortfall is reported instead.
#pragma once

#include <cstdint>

namespace mdcast::tools {

class UpdateSchedule {
public:
    // `rate` updates per second; `max_batch` caps one tick's sends.
    UpdateSchedule(double rate, uint64_t max_batch) : rate_(rate), max_batch_(max_batch) {}

    void start(int64_t now_ns) { start_ns_ = now_ns; }
    // How many to send now; call sent() with the number actually sent.
    uint64_t owed(int64_t now_ns);
    void sent(uint64_t count) { sent_ += count; }

    uint64_t total_sent() const { return sent_; }
    uint64_t capped_ticks() const { return capped_ticks_; }  // ticks that could not catch up
    // Updates owed but not sent because of the cap (the run fell behind the target).
    uint64_t shortfall(int64_t now_ns) const;

private:
    uint64_t due(int64_t now_ns) const;
    double rate_;
    uint64_t max_batch_;
    int64_t start_ns_ = 0;
    uint64_t sent_ = 0;
    uint64_t capped_ticks_ = 0;
};

}  // namespace mdcast::tools
