#include "distributor/retransmit_window.h"

#include <stdexcept>

namespace mdcast::distributor {

RetransmitWindow::RetransmitWindow(size_t max_bytes, int64_t max_age_ns)
    : max_bytes_(max_bytes), max_age_ns_(max_age_ns) {}

void RetransmitWindow::store(uint64_t sequence, std::span<const uint8_t> datagram, int64_t now_ns) {
    if (!entries_.empty() && sequence != entries_.back().sequence + 1) {
        throw std::logic_error("retransmit window: sequences must be stored in order");
    }
    while (!entries_.empty() && bytes_ + datagram.size() > max_bytes_) evict_front();
    Entry entry;
    entry.sequence = sequence;
    entry.sent_ns = now_ns;
    if (!spare_.empty()) {
        entry.datagram = std::move(spare_.back());
        spare_.pop_back();
    }
    entry.datagram.assign(datagram.begin(), datagram.end());
    bytes_ += datagram.size();
    entries_.push_back(std::move(entry));
}

void RetransmitWindow::evict_front() {
    bytes_ -= entries_.front().datagram.size();
    if (spare_.size() < 256) spare_.push_back(std::move(entries_.front().datagram));
    entries_.pop_front();
}

void RetransmitWindow::expire(int64_t now_ns) {
    while (!entries_.empty() && now_ns - entries_.front().sent_ns > max_age_ns_) evict_front();
}

RetransmitWindow::Entry* RetransmitWindow::find(uint64_t sequence) {
    if (entries_.empty() || sequence < entries_.front().sequence) return nullptr;
    const uint64_t index = sequence - entries_.front().sequence;
    return index < entries_.size() ? &entries_[index] : nullptr;
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
    return entries_.empty() ? next_sequence : entries_.front().sequence;
}

}  // namespace mdcast::distributor
