// The backbone receiver's counters, shared by the receiver and its sources
// and declared as metrics in backbone_metrics.cpp.
#pragma once

#include <cstdint>

namespace mdcast::server {

struct BackboneReceiverCounters {
    uint64_t packets_received = 0;
    uint64_t bytes_received = 0;
    uint64_t coalesced_packets = 0;  // arrived several to a message (UDP_GRO)
    uint64_t messages_received = 0;
    uint64_t messages_reassembled = 0;   // larger than a datagram, put together from parts
    uint64_t message_parts_refused = 0;  // messages in parts that could not be put together
    uint64_t repairs_received = 0;       // packets flagged as retransmissions
    uint64_t heartbeats_received = 0;
    uint64_t malformed_packets = 0;
    uint64_t truncated_packets = 0;
    uint64_t foreign_sources = 0;  // packets from distributors beyond max_sources
    uint64_t control_packets_sent = 0;
    uint64_t image_requests_sent = 0;
    uint64_t control_send_failures = 0;
    uint64_t source_silences = 0;
    uint64_t bad_signatures = 0;  // unsigned or forged while keys are configured: dropped
    uint64_t stale_epochs = 0;    // packets of an older epoch than the one followed: dropped
    uint64_t stalls = 0;          // silence checks skipped: this process had not run (paused)
};

}  // namespace mdcast::server
