// Datagrams recently multicast on the backbone, kept so lost ones can be
// re-sent when a server NAKs them. Bounded both in bytes and in age; the oldest
// sequence still held is the trailing edge the sender advertises, so receivers
// know at once what can no longer be repaired.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

namespace mdcast::distributor {

class RetransmitWindow {
  public:
    struct Entry {
        uint64_t sequence = 0;
        int64_t sent_ns = 0;
        int64_t last_repair_ns = 0;  // 0: never repaired
        std::vector<uint8_t> datagram;
    };

    RetransmitWindow(size_t max_bytes, int64_t max_age_ns);

    // Keeps a copy of the datagram with sequence `sequence`; sequences must be
    // stored in increasing order without holes. Evicts the oldest entries when
    // the byte limit is passed.
    void store(uint64_t sequence, std::span<const uint8_t> datagram, int64_t now_ns);
    // Drops entries older than the age limit.
    void expire(int64_t now_ns);

    // The entry for `sequence`, or nullptr when it is not (or no longer) held.
    Entry* find(uint64_t sequence);
    enum class RepairVerdict { kSend, kLingering, kBeyondWindow };
    // Whether a NAK for `sequence` should be answered now: not when the packet is
    // no longer held, nor within `linger_ns` of its last repair (that repair was
    // multicast and heals this asker too). Call mark_repaired() once it is sent.
    RepairVerdict repair_verdict(uint64_t sequence, int64_t now_ns, int64_t linger_ns,
                                 Entry*& entry);
    static void mark_repaired(Entry& entry, int64_t now_ns) { entry.last_repair_ns = now_ns; }

    // Oldest sequence held; `next_sequence` when nothing is held.
    uint64_t trailing_edge(uint64_t next_sequence) const;

    size_t bytes() const { return bytes_; }
    size_t packets() const { return entries_.size(); }

  private:
    void evict_front();

    size_t max_bytes_;
    int64_t max_age_ns_;
    std::deque<Entry> entries_;
    std::vector<std::vector<uint8_t>> spare_;  // recycled buffers: no allocation per packet
    size_t bytes_ = 0;
};

}  // namespace mdcast::distributor
