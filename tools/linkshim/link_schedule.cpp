#include "link_schedule.h"

#include <algorithm>
#include <climits>
#include <cstdio>

namespace mdcast::linkshim {

namespace {

constexpr int64_t kNsPerS = 1'000'000'000;

// Time the rate limit needs to put `bytes` on the wire.
int64_t wire_ns(size_t bytes, uint64_t rate_bps) {
    if (rate_bps == 0) return 0;
    return static_cast<int64_t>(static_cast<unsigned __int128>(bytes) * 8 * kNsPerS / rate_bps);
}

}  // namespace

const char* drop_reason_name(DropReason reason) {
    switch (reason) {
        case DropReason::kLoss:
            return "loss";
        case DropReason::kQueueFull:
            return "queue_full";
        case DropReason::kHeldFull:
            return "held_full";
        case DropReason::kCut:
            return "cut";
        case DropReason::kOversize:
            return "oversize";
        case DropReason::kRunt:
            return "runt";
        case DropReason::kSendError:
            return "send_error";
        case DropReason::kOverrun:
            return "overrun";
    }
    return "?";
}

uint64_t LinkCounters::dropped_total() const {
    uint64_t total = 0;
    for (const uint64_t n : dropped) total += n;
    return total;
}

std::string LinkCounters::summary() const {
    char line[160];
    std::snprintf(
        line, sizeof line, "in=%llu in_bytes=%llu out=%llu out_bytes=%llu dropped:",
        static_cast<unsigned long long>(frames_in), static_cast<unsigned long long>(bytes_in),
        static_cast<unsigned long long>(frames_out), static_cast<unsigned long long>(bytes_out));
    std::string text = line;
    for (size_t i = 0; i < kDropReasons; ++i) {
        text += ' ';
        text += drop_reason_name(static_cast<DropReason>(i));
        text += '=' + std::to_string(dropped[i]);
    }
    return text;
}

LinkSchedule::LinkSchedule(LinkShape shape, uint64_t seed)
    : shape_(shape), random_(seed), lose_(std::clamp(shape.loss_percent, 0.0, 100.0) / 100.0) {}

bool LinkSchedule::offer(std::vector<uint8_t> frame, int64_t now_ns) {
    const size_t size = frame.size();
    ++counters_.frames_in;
    counters_.bytes_in += size;
    if (!admit(size, now_ns)) return false;
    // Frames leave the rate limit one after the other, then travel for the delay:
    // due times never decrease, so the held frames stay in arrival order.
    wire_free_ns_ = std::max(wire_free_ns_, now_ns) + wire_ns(size, shape_.rate_bps);
    held_.push_back(Held{std::move(frame), wire_free_ns_ + shape_.delay_us * 1000});
    held_total_ += size;
    return true;
}

void LinkSchedule::reject_oversize(size_t bytes) {
    ++counters_.frames_in;
    counters_.bytes_in += bytes;
    count_drop(DropReason::kOversize);
}

void LinkSchedule::count_overrun(uint64_t frames) {
    counters_.frames_in += frames;
    counters_.dropped[static_cast<size_t>(DropReason::kOverrun)] += frames;
}

// The checks in the order a real path applies them: the frame itself, the cable,
// the random loss, then the router's buffers.
bool LinkSchedule::admit(size_t size, int64_t now_ns) {
    DropReason reason;
    if (size < kMinFrameBytes)
        reason = DropReason::kRunt;
    else if (size > shape_.max_frame_bytes)
        reason = DropReason::kOversize;
    else if (cut_)
        reason = DropReason::kCut;
    else if (lose_(random_))
        reason = DropReason::kLoss;
    else if (shape_.rate_bps != 0 && queued_bytes(now_ns) + size > shape_.queue_bytes)
        reason = DropReason::kQueueFull;
    else if (held_total_ + size > shape_.held_bytes)
        reason = DropReason::kHeldFull;
    else
        return true;
    count_drop(reason);
    return false;
}

size_t LinkSchedule::queued_bytes(int64_t now_ns) const {
    if (shape_.rate_bps == 0 || wire_free_ns_ <= now_ns) return 0;
    const auto waiting_ns = static_cast<unsigned __int128>(wire_free_ns_ - now_ns);
    return static_cast<size_t>(waiting_ns * shape_.rate_bps / (8 * kNsPerS));
}

int64_t LinkSchedule::next_due_ns() const {
    return held_.empty() ? INT64_MAX : held_.front().due_ns;
}

size_t LinkSchedule::take_due(int64_t now_ns, std::vector<std::vector<uint8_t>>& out) {
    size_t taken = 0;
    while (!held_.empty() && held_.front().due_ns <= now_ns) {
        Held& front = held_.front();
        held_total_ -= front.frame.size();
        out.push_back(std::move(front.frame));
        held_.pop_front();
        ++taken;
    }
    return taken;
}

void LinkSchedule::set_cut(bool cut) {
    cut_ = cut;
    if (!cut) return;
    // A cable pulled loses what was on it.
    for (size_t i = 0; i < held_.size(); ++i) count_drop(DropReason::kCut);
    held_.clear();
    held_total_ = 0;
    wire_free_ns_ = 0;
}

void LinkSchedule::count_drop(DropReason reason) {
    ++counters_.dropped[static_cast<size_t>(reason)];
}

}  // namespace mdcast::linkshim
