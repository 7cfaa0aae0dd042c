// Reliable, ordered delivery of one backbone stream at a server: the receiving
// half of NAK-based repair. Pure logic; the caller passes the time, so tests
// drive it with a fake clock and crafted sequences.
//
// - Packets are delivered in sequence order, each exactly once. A packet after
//   a gap is held (bounded by max_buffered_bytes) until the gap is repaired or
//   given up.
// - A missing packet is NAKed after a random back-off in [nak_backoff_min,
//   nak_backoff_max]: a reordered packet arriving meanwhile cancels it, and a
//   repair another server triggered (repairs are multicast) arrives before most
//   servers ask. Unanswered NAKs are retried after nak_retry, doubling each time
//   (up to 128 x), and given up after nak_max_attempts, or at once when the
//   sender's trailing edge has passed.
// - A sequence more than max_gap_packets ahead of the highest seen (a data
//   packet or a heartbeat's next sequence) is not believed on its own: with
//   signing off one forged datagram could otherwise make the server skip or
//   wait for a billion packets. It is dropped and counted until
//   jump_confirmations of them (each within max_gap_packets of the first) say
//   the same; only then is the jump taken: the packets before the last
//   max_gap_packets are reported lost at once and the rest NAKed as usual.
// - Given-up packets are reported as unrecoverable [from, to) before anything
//   after them is delivered.
// - The first packet of an epoch is a late join at the live edge: nothing before
//   it is asked for. A new epoch is a new source: everything held is dropped.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace mdcast::server {

struct LossRecoverySettings {
    int64_t nak_backoff_min_ns = 50'000;
    int64_t nak_backoff_max_ns = 300'000;
    int64_t nak_retry_ns = 1'000'000;
    uint32_t nak_max_attempts = 20;
    size_t max_buffered_bytes = 32 << 20;
    uint64_t max_gap_packets = 100'000;  // a larger jump is not NAKed: it is lost at once
    uint32_t jump_confirmations = 3;     // ... and only taken when this many packets agree
    uint64_t seed = 1;
};

struct LossRecoveryCounters {
    uint64_t delivered = 0;
    uint64_t duplicates = 0;        // already delivered or already held: dropped
    uint64_t out_of_order = 0;      // held after a gap
    uint64_t gaps = 0;              // gap events (a run of missing packets detected)
    uint64_t missing_detected = 0;  // packets found missing
    uint64_t repaired = 0;          // missing packets that arrived later
    uint64_t naks_sent = 0;         // NAK messages
    uint64_t nak_sequences = 0;     // sequences asked for, retries included
    uint64_t unrecoverable = 0;     // packets given up
    uint64_t unrecoverable_events = 0;
    uint64_t epoch_changes = 0;
    uint64_t buffer_overflows = 0;  // gaps given up because the hold buffer was full
    uint64_t jumps_refused = 0;     // packets/heartbeats too far ahead, not (yet) believed
    uint64_t jumps_taken = 0;       // far jumps confirmed by jump_confirmations packets
};

class LossRecovery {
  public:
    class Handler {
      public:
        virtual void on_deliver(uint64_t sequence, std::span<const uint8_t> datagram) = 0;
        // Packets [from, to) will never arrive.
        virtual void on_unrecoverable(uint64_t from, uint64_t to) = 0;
        virtual void on_repaired(uint64_t sequence, int64_t recovery_ns) = 0;
        // A new epoch (previous 0: the first join).
        virtual void on_source_reset(uint64_t previous_epoch, uint64_t epoch) = 0;

      protected:
        virtual ~Handler() = default;
    };

    using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;  // [from, to)

    LossRecovery(const LossRecoverySettings& settings, Handler& handler);

    void on_data(uint64_t epoch, uint64_t sequence, std::span<const uint8_t> datagram,
                 int64_t now_ns);
    // `next_sequence`: the next the sender will send; `trailing_edge`: the oldest
    // it can still repair.
    void on_heartbeat(uint64_t epoch, uint64_t next_sequence, uint64_t trailing_edge,
                      int64_t now_ns);
    // Appends the ranges to NAK now to `naks` and gives up exhausted ones.
    void on_timer(int64_t now_ns, Ranges& naks);
    // When on_timer next has work; INT64_MAX when nothing is missing.
    int64_t next_deadline() const;
    // Retries wait at least this long (set from the measured round trip, so a
    // loaded path does not draw a second NAK while the first repair is on its way).
    void set_retry_floor(int64_t ns) { retry_floor_ns_ = ns; }
    int64_t retry_ns() const { return std::max(settings_.nak_retry_ns, retry_floor_ns_); }

    uint64_t epoch() const { return epoch_; }
    uint64_t next_expected() const { return next_expected_; }
    size_t missing() const { return missing_.size(); }
    size_t buffered_bytes() const { return buffered_bytes_; }
    // True while the packet is held after a gap (its copy waits for delivery).
    bool holds(uint64_t sequence) const { return held_.contains(sequence); }
    const LossRecoveryCounters& counters() const { return counters_; }

  private:
    struct Missing {
        int64_t detected_ns;
        int64_t next_nak_ns;
        uint32_t attempts = 0;
        bool lost = false;
    };

    bool enter_epoch(uint64_t epoch, uint64_t first_sequence);
    bool believe_jump(uint64_t sequence);
    void mark_missing(uint64_t from, uint64_t to, int64_t now_ns);
    void give_up_below(uint64_t sequence);
    void report_lost(uint64_t from, uint64_t to);
    void advance();
    void hold(uint64_t sequence, std::span<const uint8_t> datagram);
    void enforce_buffer_limit();
    int64_t backoff_ns();

    LossRecoverySettings settings_;
    Handler& handler_;
    uint64_t epoch_ = 0;
    uint64_t next_expected_ = 0;  // next sequence to deliver
    uint64_t highest_seen_ = 0;   // highest sequence known to exist (seen or advertised - 1)
    std::map<uint64_t, Missing> missing_;
    std::map<uint64_t, std::vector<uint8_t>> held_;
    size_t buffered_bytes_ = 0;
    int64_t earliest_nak_ns_ = INT64_MAX;
    int64_t retry_floor_ns_ = 0;  // may be early (never late) between on_timer calls
    uint64_t jump_sequence_ = 0;  // the first unconfirmed far sequence (0: none)
    uint32_t jump_votes_ = 0;
    std::mt19937_64 random_;
    LossRecoveryCounters counters_;
};

}  // namespace mdcast::server
