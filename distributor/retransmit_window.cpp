#include "distributor/retransmit_window.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "proto/limits.h"

namespace mdcast::distributor {

namespace {

constexpr size_t kNoPlace = SIZE_MAX;

// The ring's address space, reserved at start-up: a size the kernel will not
// reserve is a configuration error to say at once, not a bad_alloc.
std::unique_ptr<uint8_t[]> reserve_ring(size_t bytes) {
    uint8_t* ring = new (std::nothrow) uint8_t[bytes];
    if (!ring) {
        throw std::runtime_error("backbone.retransmit_window_bytes: cannot reserve " +
                                 std::to_string(bytes) + " bytes for the retransmit window");
    }
    return std::unique_ptr<uint8_t[]>(ring);
}

}  // namespace

RetransmitWindow::RetransmitWindow(size_t max_bytes, int64_t max_age_ns, int64_t horizon_ns)
    : max_bytes_(max_bytes),
      max_age_ns_(max_age_ns),
      horizon_ns_(horizon_ns),
      ring_size_(max_bytes + proto::kMaxDatagramBytes),
      ring_(reserve_ring(ring_size_)),
      entries_(1024) {}

void RetransmitWindow::store(uint64_t sequence, std::span<const uint8_t> datagram, int64_t now_ns) {
    if (count_ > 0 &&
        sequence != entries_[(first_ + count_ - 1) & (entries_.size() - 1)].sequence + 1) {
        throw std::logic_error("retransmit window: sequences must be stored in order");
    }
    if (datagram.empty() || datagram.size() > proto::kMaxDatagramBytes) {
        throw std::logic_error("retransmit window: datagram size out of range");
    }
    expire(now_ns);
    while (count_ > 0 && bytes_ + datagram.size() > max_bytes_) evict_for_room(now_ns);
    size_t at = place_for(datagram.size());
    while (at == kNoPlace) {  // the bytes fit the budget but not the ring's free run
        evict_for_room(now_ns);
        at = place_for(datagram.size());
    }
    if (count_ == entries_.size()) grow_entries();
    std::memcpy(ring_.get() + at, datagram.data(), datagram.size());
    write_ = at + datagram.size();
    footprint_ = std::max(footprint_, write_);
    Entry& entry = entries_[(first_ + count_) & (entries_.size() - 1)];
    entry = Entry{sequence, now_ns, 0, std::span<uint8_t>(ring_.get() + at, datagram.size())};
    ++count_;
    bytes_ += datagram.size();
}

// Held bytes run from the oldest datagram's start (`read`) to write_, maybe
// wrapping past the ring's end; a datagram never wraps, so the free space is
// [write_, end) then [0, read) when unwrapped, or [write_, read) when wrapped.
//
// Unwrapped, the ring's start is used again as soon as the room before `read`
// is twice what is held: the pages touched (the process's memory) follow what
// the window holds (a few MB when the age limit keeps it small), instead of
// the whole byte limit walked through once (64 MiB of RSS for a window holding
// 2 MB). Twice, so the new data does not catch up with the old before the old
// ages out unless the rate more than doubles (then the oldest go first, as when
// the ring is full).
size_t RetransmitWindow::place_for(size_t size) const {
    if (count_ == 0) return 0;
    const size_t read = static_cast<size_t>(front().datagram.data() - ring_.get());
    if (write_ > read) {
        if (read >= 2 * bytes_ + size) return 0;
        if (ring_size_ - write_ >= size) return write_;
        return size <= read ? 0 : kNoPlace;
    }
    return read - write_ >= size ? write_ : kNoPlace;
}

void RetransmitWindow::evict_for_room(int64_t now_ns) {
    if (now_ns - front().sent_ns < horizon_ns_) ++short_evictions_;
    evict_front();
}

void RetransmitWindow::evict_front() {
    bytes_ -= front().datagram.size();
    front() = Entry{};
    first_ = (first_ + 1) & (entries_.size() - 1);
    if (--count_ == 0) write_ = 0;
}

void RetransmitWindow::grow_entries() {
    std::vector<Entry> larger(entries_.size() * 2);
    for (size_t i = 0; i < count_; ++i) larger[i] = entries_[(first_ + i) & (entries_.size() - 1)];
    entries_.swap(larger);
    first_ = 0;
}

void RetransmitWindow::expire(int64_t now_ns) {
    while (count_ > 0 && now_ns - front().sent_ns > max_age_ns_) evict_front();
}

RetransmitWindow::Entry* RetransmitWindow::find(uint64_t sequence) {
    if (count_ == 0 || sequence < front().sequence) return nullptr;
    const uint64_t index = sequence - front().sequence;
    return index < count_ ? &entries_[(first_ + index) & (entries_.size() - 1)] : nullptr;
}

RetransmitWindow::RepairVerdict RetransmitWindow::repair_verdict(uint64_t sequence, int64_t now_ns,
                                                                 int64_t linger_ns, Entry*& entry) {
    entry = find(sequence);
    if (!entry) return RepairVerdict::kBeyondWindow;
    if (entry->last_repair_ns != 0 && now_ns - entry->last_repair_ns < linger_ns) {
        return RepairVerdict::kLingering;
    }
    return RepairVerdict::kSend;
}

uint64_t RetransmitWindow::trailing_edge(uint64_t next_sequence) const {
    return count_ == 0 ? next_sequence : front().sequence;
}

}  // namespace mdcast::distributor
