// Datagrams recently multicast on the backbone, kept so lost ones can be
// re-sent when a server NAKs them. Bounded both in bytes and in age; the oldest
// sequence still held is the trailing edge the sender advertises, so receivers
// know at once what can no longer be repaired.
//
// The datagrams are copied into one ring of bytes and described by a ring of
// entries: storing one is a copy, with no allocation and no free per packet,
// and the oldest are evicted as the newest arrive (by bytes and by age), not
// in a burst when a heartbeat finally expires a second's worth of them.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace mdcast::distributor {

class RetransmitWindow {
  public:
    struct Entry {
        uint64_t sequence = 0;
        int64_t sent_ns = 0;
        int64_t last_repair_ns = 0;   // 0: never repaired
        std::span<uint8_t> datagram;  // in the window's ring: valid while held
    };

    // The ring takes max_bytes plus one largest datagram of address space;
    // pages are touched only as datagrams fill them.
    // `horizon_ns` is how long servers may ask for a repair
    // (backbone.repair_horizon_ms): a datagram evicted for room younger than
    // that is counted (short_evictions), since a repair it promised is lost.
    RetransmitWindow(size_t max_bytes, int64_t max_age_ns, int64_t horizon_ns = 0);

    // Keeps a copy of the datagram with sequence `sequence`; sequences must be
    // stored in increasing order without holes, each at most 65,536 bytes.
    // Evicts the oldest entries past the byte limit or older than the age
    // limit at `now_ns`.
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

    size_t bytes() const { return bytes_; }  // of the datagrams held
    // Bytes of the ring ever written to (its pages are in the process's memory).
    size_t footprint() const { return footprint_; }
    // Datagrams evicted for room while younger than the repair horizon.
    uint64_t short_evictions() const { return short_evictions_; }
    // How long the oldest datagram held has been held, at `now_ns` (0: none).
    int64_t held_ns(int64_t now_ns) const { return count_ == 0 ? 0 : now_ns - front().sent_ns; }
    size_t packets() const { return count_; }

  private:
    Entry& front() { return entries_[first_]; }
    const Entry& front() const { return entries_[first_]; }
    // Where `size` bytes can go without overwriting a held datagram; SIZE_MAX
    // when the oldest must go first.
    size_t place_for(size_t size) const;
    void evict_for_room(int64_t now_ns);
    void evict_front();
    void grow_entries();

    size_t max_bytes_;
    int64_t max_age_ns_;
    int64_t horizon_ns_;
    uint64_t short_evictions_ = 0;
    size_t ring_size_;
    std::unique_ptr<uint8_t[]> ring_;  // not zeroed: untouched pages cost no memory
    size_t write_ = 0;                 // where the next datagram goes, room permitting
    size_t footprint_ = 0;             // the ring's bytes ever written: its pages in memory
    std::vector<Entry> entries_;       // circular, a power of two in size
    size_t first_ = 0;                 // the oldest entry
    size_t count_ = 0;
    size_t bytes_ = 0;
};

}  // namespace mdcast::distributor
