// Paced publishing in the style of lbmpubload: at every tick, send what is owed
// by now at the target rate, so a late tick does not lower the rate; the owed
// amount is capped per tick so a long stall does not become a burst that
// swamps the receivers, and the shortfall is reported instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>

namespace mdcast::tools {

class UpdateSchedule {
  public:
    // `rate` updates per second; `max_batch` caps one tick's sends.
    UpdateSchedule(double rate, uint64_t max_batch) : rate_(rate), max_batch_(max_batch) {}

    void start(int64_t now_ns) { start_ns_ = now_ns; }
    // How many to send now; call sent() with the number actually sent.
    uint64_t owed(int64_t now_ns);
    void sent(uint64_t count) { sent_ += count; }
    // Owed updates that had nowhere to go (an interactive source with no item
    // wanted): settled without sending, so they do not come back as a burst.
    void skipped(uint64_t count) { skipped_ += count; }

    uint64_t total_sent() const { return sent_; }
    double rate() const { return rate_; }
    uint64_t capped_ticks() const { return capped_ticks_; }  // ticks that could not catch up
    // Updates owed but not sent because of the cap (the run fell behind the target).
    uint64_t shortfall(int64_t now_ns) const;

  private:
    uint64_t due(int64_t now_ns) const;
    double rate_;
    uint64_t max_batch_;
    int64_t start_ns_ = 0;
    uint64_t sent_ = 0;
    uint64_t skipped_ = 0;
    uint64_t capped_ticks_ = 0;
};

// Which updates carry a latency stamp when only `stamps_per_s` of them should
// (--latency-rate, as the ETA perf tools and lbmpubload's "ping" messages): the
// stamps owed follow their own UpdateSchedule, and within a tick the owed
// stamps go to updates picked uniformly at random (selection sampling), so they
// do not alias with batching. Stamps owed beyond a tick's updates carry over.
class StampSelector {
  public:
    // `stamps_per_s` < 0: stamp every update.
    StampSelector(double stamps_per_s, uint64_t seed)
        : every_(stamps_per_s < 0), schedule_(every_ ? 0 : stamps_per_s, UINT64_MAX), rng_(seed) {}

    void start(int64_t now_ns) { schedule_.start(now_ns); }
    // A tick at `now_ns` will send `updates` updates; call next() once for each.
    void begin_tick(int64_t now_ns, uint64_t updates);
    // True when the next update of the tick is to be stamped.
    bool next();
    uint64_t stamped() const { return stamped_; }

  private:
    bool every_;
    UpdateSchedule schedule_;
    std::mt19937_64 rng_;
    uint64_t tick_updates_left_ = 0;
    uint64_t tick_stamps_left_ = 0;
    uint64_t stamped_ = 0;
};

// What a load source reports at the end: the JSON line mdcast-bench reads
// ({"type":"source_summary",...}), printed on stdout and flushed.
struct SourceSummary {
    const char* mode = "broadcast";  // or "interactive" (sink-driven)
    size_t items = 0;
    uint64_t requests = 0;  // interactive: item requests answered with an image
    uint64_t closes = 0;    // interactive: items closed by the distributor
    size_t open_items = 0;  // interactive: items with interest at the end
    double elapsed_s = 0;
    double target_per_s = 0;
    uint64_t sent = 0;
    uint64_t shortfall = 0;
    uint64_t capped_ticks = 0;
    uint64_t stamped = 0;
    int64_t update_bytes = 0;
    uint64_t undersized = 0;
    uint64_t rejected = 0;
};
// The pacing part of the summary of a run that began publishing at `started_ns`
// (0: never began), as of `now_ns`.
SourceSummary pacing_summary(size_t items, int64_t started_ns, int64_t now_ns,
                             const UpdateSchedule& schedule, const StampSelector& stamps);
void print_source_summary(const SourceSummary& summary);

}  // namespace mdcast::tools
