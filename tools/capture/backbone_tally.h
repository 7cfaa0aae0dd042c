// What a passive listener on the backbone saw, for mdcast-capture's summary:
// packets, messages by type, items, and per source (distributor epoch) the
// gaps in its packet sequence — packets that never arrived, and those that
// arrived later as repairs or out of order.
//
// A capture joins the groups like a server but never NAKs: the gaps it
// reports are what this host's socket lost or what the distributor never
// sent (testing.loss), and "filled" says how many of them some server's NAK
// brought back as a multicast repair.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "proto/backbone_packet.h"

namespace mdcast::tools {

struct SourceTally {
    uint16_t source = 0;  // distributor id (top bits of the epoch)
    uint64_t epoch = 0;
    uint64_t first_sequence = 0;
    uint64_t next_sequence = 0;          // one past the highest data packet or heartbeat seen
    uint64_t data_packets = 0;           // distinct data packets
    uint64_t duplicates = 0;             // data packets seen again (repairs of what was not lost)
    uint64_t gaps = 0;                   // times the sequence jumped ahead
    uint64_t missing = 0;                // packets the jumps skipped
    uint64_t filled = 0;                 // of those, packets that arrived later
    std::map<uint64_t, uint64_t> holes;  // [from, to) still missing
};

struct BackboneTallyCounts {
    uint64_t packets = 0;  // every datagram
    uint64_t bytes = 0;
    uint64_t data_packets = 0;
    uint64_t heartbeats = 0;
    uint64_t repairs = 0;  // flagged as retransmissions
    uint64_t signed_packets = 0;
    uint64_t malformed = 0;
    uint64_t messages = 0;  // in distinct data packets
    uint64_t refreshes = 0;
    uint64_t updates = 0;
    uint64_t statuses = 0;
    uint64_t directories = 0;
};

class BackboneTally {
  public:
    // One datagram as received. Malformed ones are counted and otherwise ignored.
    void add(std::span<const uint8_t> datagram);

    const BackboneTallyCounts& counts() const { return counts_; }
    size_t items() const { return items_.size(); }
    std::vector<SourceTally> sources() const;
    uint64_t gaps() const;
    uint64_t missing() const;
    uint64_t unfilled() const;

    // {"packets":..,"updates":..,"items":..,"gaps":..,"sources":[{...}]} without braces
    // around it, for the caller's JSON object.
    std::string json_fields() const;

  private:
    void count_messages(std::span<const uint8_t> datagram, const proto::PacketHeader& header);
    // True when the packet is new (not a duplicate); updates the holes.
    bool note_sequence(SourceTally& source, uint64_t sequence);
    void note_heartbeat(SourceTally& source, uint64_t next_sequence);

    BackboneTallyCounts counts_;
    std::map<uint64_t, SourceTally> sources_;  // by epoch
    std::set<uint64_t> items_;
};

}  // namespace mdcast::tools
