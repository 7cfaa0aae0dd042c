// The data packets of a backbone capture put back in the order the
// distributor sent them, as a publisher would have to send them again:
// per source epoch, each sequence number once (the first copy; repeated
// repairs are dropped) in sequence order, so that a packet that arrived late
// as a repair takes its place before the packets that overtook it. Sources
// are merged by receive time; a packet's time is never later than that of the
// packet after it in its sequence (a repair keeps its place in time too).
//
// Packets that never arrived stay missing: their updates cannot be replayed,
// and missing() says how many.
//
// A quiet stretch longer than the caller's max_gap_ns is cut to max_gap_ns
// (every later packet moves earlier by the rest), so a capture whose
// timestamps jump (a broken clock, a hostile file: 2^32 s is 136 years) is
// replayed with a bounded pause instead of waiting for ever.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mdcast::tools {

struct TimelinePacket {
    int64_t time_ns = 0;  // receive time, as adjusted above
    uint64_t epoch = 0;
    std::span<const uint8_t> datagram;
};

struct TimelineCounts {
    uint64_t datagrams = 0;  // UDP datagrams in the files
    uint64_t data_packets = 0;
    uint64_t duplicates = 0;
    uint64_t missing = 0;  // sequence numbers below a source's highest that never arrived
    uint64_t malformed = 0;
    uint64_t other = 0;  // heartbeats and anything that is not a data packet
    uint64_t not_udp = 0;
    uint64_t gaps_cut = 0;  // quiet stretches longer than max_gap_ns, cut to it
};

class CaptureTimeline {
  public:
    // Reads the files (a rotated set in order); throws std::runtime_error on a
    // file that cannot be read.
    static CaptureTimeline load(const std::vector<std::string>& files, int64_t max_gap_ns);
    // The same from datagrams already in memory (time, bytes).
    void add(int64_t time_ns, std::span<const uint8_t> datagram);
    // Orders what was added and cuts gaps over `max_gap_ns` (> 0); call once,
    // after the last add().
    void finish(int64_t max_gap_ns);

    const std::vector<TimelinePacket>& packets() const { return packets_; }
    const TimelineCounts& counts() const { return counts_; }
    // Receive time of the first and the last packet (0 when empty).
    int64_t first_ns() const { return packets_.empty() ? 0 : packets_.front().time_ns; }
    int64_t last_ns() const { return packets_.empty() ? 0 : packets_.back().time_ns; }

  private:
    struct Stored {
        uint64_t epoch;
        uint64_t sequence;
        int64_t time_ns;
        size_t offset;
        size_t size;
    };
    void cut_gaps(std::vector<Stored>& ordered, int64_t max_gap_ns);

    std::vector<uint8_t> arena_;
    std::vector<Stored> stored_;
    std::vector<TimelinePacket> packets_;
    TimelineCounts counts_;
};

}  // namespace mdcast::tools
