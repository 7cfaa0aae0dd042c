#include "server/backbone/loss_recovery.h"

#include <algorithm>
#include <climits>

#include "proto/repair_horizon.h"

namespace mdcast::server {

LossRecovery::LossRecovery(const LossRecoverySettings& settings, Handler& handler)
    : settings_(settings), handler_(handler), random_(settings.seed) {}

int64_t LossRecovery::backoff_ns() {
    if (settings_.nak_backoff_max_ns <= settings_.nak_backoff_min_ns)
        return settings_.nak_backoff_min_ns;
    std::uniform_int_distribution<int64_t> spread(settings_.nak_backoff_min_ns,
                                                  settings_.nak_backoff_max_ns);
    return spread(random_);
}

// Returns true when `epoch` is new: state is reset and the stream (re)starts at
// `first_sequence`, the live edge.
bool LossRecovery::enter_epoch(uint64_t epoch, uint64_t first_sequence) {
    if (epoch == epoch_) return false;
    const uint64_t previous = epoch_;
    if (previous != 0) ++counters_.epoch_changes;
    epoch_ = epoch;
    missing_.clear();
    held_.clear();
    buffered_bytes_ = 0;
    next_expected_ = first_sequence;
    highest_seen_ = first_sequence == 0 ? 0 : first_sequence - 1;
    jump_sequence_ = 0;
    jump_votes_ = 0;
    handler_.on_source_reset(previous, epoch);
    return true;
}

// A sequence beyond highest_seen_ + max_gap_packets counts as one vote for a
// far jump; true once jump_confirmations votes within max_gap_packets of each
// other agree (the jump is then taken), false while it is not believed.
bool LossRecovery::believe_jump(uint64_t sequence) {
    if (sequence - highest_seen_ <= settings_.max_gap_packets) return true;
    const bool agrees = jump_votes_ > 0 && sequence >= jump_sequence_ &&
                        sequence - jump_sequence_ <= settings_.max_gap_packets;
    if (!agrees) {
        jump_sequence_ = sequence;
        jump_votes_ = 0;
    }
    if (++jump_votes_ < settings_.jump_confirmations) {
        ++counters_.jumps_refused;
        return false;
    }
    ++counters_.jumps_taken;
    jump_sequence_ = 0;
    jump_votes_ = 0;
    return true;
}

void LossRecovery::on_data(uint64_t epoch, uint64_t sequence, std::span<const uint8_t> datagram,
                           int64_t now_ns) {
    enter_epoch(epoch, sequence);
    if (sequence < next_expected_ || held_.contains(sequence)) {
        ++counters_.duplicates;
        return;
    }
    if (sequence > highest_seen_ && !believe_jump(sequence)) return;
    if (sequence > highest_seen_ + 1) mark_missing(highest_seen_ + 1, sequence, now_ns);
    highest_seen_ = std::max(highest_seen_, sequence);
    if (const auto it = missing_.find(sequence); it != missing_.end()) {
        if (!it->second.lost) {
            ++counters_.repaired;
            handler_.on_repaired(sequence, now_ns - it->second.detected_ns);
        }
        missing_.erase(it);
    }
    if (sequence == next_expected_) {
        // The fast path: in order, nothing held, no copy.
        ++counters_.delivered;
        ++next_expected_;
        handler_.on_deliver(sequence, datagram);
    } else {
        ++counters_.out_of_order;
        hold(sequence, datagram);
    }
    advance();
    enforce_buffer_limit();
}

void LossRecovery::on_heartbeat(uint64_t epoch, uint64_t next_sequence, uint64_t trailing_edge,
                                int64_t now_ns) {
    if (enter_epoch(epoch, next_sequence)) return;
    if (next_sequence > highest_seen_ + 1 && !believe_jump(next_sequence - 1)) return;
    if (next_sequence > highest_seen_ + 1) {
        mark_missing(highest_seen_ + 1, next_sequence, now_ns);  // tail loss
        highest_seen_ = next_sequence - 1;
    }
    if (trailing_edge > next_expected_) {
        give_up_below(trailing_edge);  // the sender can no longer repair these
        advance();
    }
}

void LossRecovery::mark_missing(uint64_t from, uint64_t to, int64_t now_ns) {
    ++counters_.gaps;
    if (to - from > settings_.max_gap_packets) {
        // Too far to ask for one by one (or a hostile sequence number): give up
        // everything before the last max_gap_packets and resume there.
        const uint64_t resume = to - settings_.max_gap_packets;
        give_up_below(from);
        advance();  // everything below `from` is delivered or reported now
        report_lost(from, resume);
        next_expected_ = resume;
        from = resume;
    }
    counters_.missing_detected += to - from;
    const int64_t nak_at = now_ns + backoff_ns();
    for (uint64_t s = from; s < to; ++s) missing_.emplace(s, Missing{now_ns, nak_at});
    earliest_nak_ns_ = std::min(earliest_nak_ns_, nak_at);
}

void LossRecovery::give_up_below(uint64_t sequence) {
    for (auto it = missing_.begin(); it != missing_.end() && it->first < sequence; ++it) {
        it->second.lost = true;
    }
}

void LossRecovery::report_lost(uint64_t from, uint64_t to) {
    counters_.unrecoverable += to - from;
    ++counters_.unrecoverable_events;
    handler_.on_unrecoverable(from, to);
}

// Delivers held packets and skips given-up ones, in order, as far as possible.
void LossRecovery::advance() {
    for (;;) {
        if (!held_.empty() && held_.begin()->first == next_expected_) {
            auto node = held_.extract(held_.begin());
            buffered_bytes_ -= node.mapped().size();
            ++counters_.delivered;
            ++next_expected_;
            handler_.on_deliver(node.key(), node.mapped());
            continue;
        }
        auto it = missing_.begin();
        if (it == missing_.end() || it->first != next_expected_ || !it->second.lost) return;
        const uint64_t from = next_expected_;
        while (it != missing_.end() && it->first == next_expected_ && it->second.lost) {
            it = missing_.erase(it);
            ++next_expected_;
        }
        report_lost(from, next_expected_);
    }
}

void LossRecovery::hold(uint64_t sequence, std::span<const uint8_t> datagram) {
    held_.emplace(sequence, std::vector<uint8_t>(datagram.begin(), datagram.end()));
    buffered_bytes_ += datagram.size();
}

// A full hold buffer gives up the oldest gap so what follows it can go out.
void LossRecovery::enforce_buffer_limit() {
    while (buffered_bytes_ > settings_.max_buffered_bytes && !missing_.empty()) {
        ++counters_.buffer_overflows;
        give_up_below(missing_.begin()->first + 1);
        advance();
    }
}

void LossRecovery::on_timer(int64_t now_ns, Ranges& naks) {
    earliest_nak_ns_ = INT64_MAX;
    uint64_t give_up_to = 0;  // every missing packet below this is lost
    for (auto& [sequence, missing] : missing_) {
        if (missing.lost) continue;
        if (missing.next_nak_ns > now_ns) {
            earliest_nak_ns_ = std::min(earliest_nak_ns_, missing.next_nak_ns);
            continue;
        }
        if (missing.attempts >= settings_.nak_max_attempts) {
            give_up_to = sequence + 1;
            continue;
        }
        // Retries back off exponentially (x2 up to x128): an overloaded server whose
        // repair is still queued in its own socket buffer keeps its budget instead
        // of burning it in a few milliseconds, and NAK storms damp themselves.
        missing.next_nak_ns =
            now_ns + (retry_ns() << std::min(missing.attempts, proto::kMaxNakRetryDoublings));
        ++missing.attempts;
        earliest_nak_ns_ = std::min(earliest_nak_ns_, missing.next_nak_ns);
        ++counters_.nak_sequences;
        if (!naks.empty() && naks.back().second == sequence) {
            ++naks.back().second;
        } else {
            naks.emplace_back(sequence, sequence + 1);
        }
    }
    if (!naks.empty()) ++counters_.naks_sent;
    if (give_up_to > 0) {
        give_up_below(give_up_to);
        advance();
    }
}

int64_t LossRecovery::next_deadline() const {
    return missing_.empty() ? INT64_MAX : earliest_nak_ns_;
}

}  // namespace mdcast::server
