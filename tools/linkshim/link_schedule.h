// One direction of mdcast-linkshim: what a link does to the frames offered to it.
// Pure (no I/O, no clock of its own): the caller passes the time of every call, so
// tests drive it with a fake clock and the shim with CLOCK_MONOTONIC.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <vector>

namespace mdcast::linkshim {

// The shape of one direction. Zero means "not applied" for delay, rate and loss.
struct LinkShape {
    int64_t delay_us = 0;          // one-way delay added to every frame
    uint64_t rate_bps = 0;         // serialisation rate in bits/s (0: unlimited)
    double loss_percent = 0;       // random loss, 0..100
    size_t queue_bytes = 262144;   // bytes waiting for the rate limit; a frame beyond: tail-dropped
    size_t held_bytes = 64 << 20;  // every byte the direction holds (queue + delay line)
    size_t max_frame_bytes = 9216;  // larger frames are dropped as oversize
};

// kOverrun: frames the kernel dropped before the shim read them (its socket buffer full).
enum class DropReason {
    kLoss,
    kQueueFull,
    kHeldFull,
    kCut,
    kOversize,
    kRunt,
    kSendError,
    kOverrun
};
constexpr size_t kDropReasons = 8;
const char* drop_reason_name(DropReason reason);

// An Ethernet header: anything shorter is not a frame.
constexpr size_t kMinFrameBytes = 14;

struct LinkCounters {
    uint64_t frames_in = 0;
    uint64_t bytes_in = 0;
    uint64_t frames_out = 0;
    uint64_t bytes_out = 0;
    uint64_t dropped[kDropReasons] = {};

    uint64_t dropped_total() const;
    // "in=N in_bytes=B out=N out_bytes=B dropped: loss=N queue_full=N ..."
    std::string summary() const;
};

class LinkSchedule {
  public:
    LinkSchedule(LinkShape shape, uint64_t seed);

    // Offers a frame read at `now_ns`. Returns true when it is held for delivery;
    // false when dropped (the reason is counted).
    bool offer(std::vector<uint8_t> frame, int64_t now_ns);

    // When the next held frame is due (INT64_MAX when none is held).
    int64_t next_due_ns() const;
    // Moves the frames due at `now_ns` into `out` (in arrival order); returns how many.
    size_t take_due(int64_t now_ns, std::vector<std::vector<uint8_t>>& out);

    // A cut link drops every frame offered, and those it held when cut.
    void set_cut(bool cut);
    bool cut() const { return cut_; }

    // A frame the caller could not read whole: counted in and dropped as oversize.
    void reject_oversize(size_t bytes);
    // Frames the kernel dropped before they were read: counted in and dropped as overrun.
    void count_overrun(uint64_t frames);

    // What became of a frame the caller took: sent, or the send failed.
    void count_sent(size_t bytes) {
        ++counters_.frames_out;
        counters_.bytes_out += bytes;
    }
    void count_send_error() { count_drop(DropReason::kSendError); }

    const LinkCounters& counters() const { return counters_; }
    // Bytes waiting for the rate limit at `now_ns` (what queue_bytes bounds).
    size_t queued_bytes(int64_t now_ns) const;

  private:
    struct Held {
        std::vector<uint8_t> frame;
        int64_t due_ns;
    };

    bool admit(size_t size, int64_t now_ns);
    void count_drop(DropReason reason);

    LinkShape shape_;
    std::mt19937_64 random_;
    std::bernoulli_distribution lose_;
    std::deque<Held> held_;
    size_t held_total_ = 0;
    int64_t wire_free_ns_ = 0;  // when the rate limit has sent every frame accepted so far
    bool cut_ = false;
    LinkCounters counters_;
};

}  // namespace mdcast::linkshim
