// The distributor's end of the backbone: packs framed messages into datagrams,
// numbers them within this run's epoch and multicasts them; sends heartbeats.
//
// Messages queued during one loop iteration leave together at the flush point
// (natural batching), or after backbone.flush_interval_us when configured. A
// datagram that is full is sent at once. Reliability (retransmit window, NAKs)
// builds on the sequence numbers assigned here.
#pragma once

#include <cstdint>
#include <span>

#include "common/event_loop.h"
#include "common/flush_scheduler.h"
#include "common/logging.h"
#include "common/udp_socket.h"
#include "proto/backbone_packet.h"

namespace mdcast::distributor {

struct BackboneSenderCounters {
    uint64_t packets_sent = 0;
    uint64_t bytes_sent = 0;
    uint64_t messages_sent = 0;
    uint64_t heartbeats_sent = 0;
    uint64_t send_failures = 0;     // datagrams the kernel refused (socket buffer full)
    uint64_t oversize_messages = 0; // messages larger than one datagram, refused
};

class BackboneSender final : public Flushable {
public:
    struct Settings {
        MulticastEndpoint endpoint;
        uint32_t max_datagram_bytes = 1400;
        uint32_t flush_interval_us = 0;
        uint32_t heartbeat_interval_ms = 100;
        uint32_t send_buffer_bytes = 0;
        uint16_t control_port = 0;  // advertised in heartbeats
    };

    BackboneSender(EventLoop& loop, const Settings& settings, uint64_t epoch);

    // Queue one framed message. Returns false when it can never fit a datagram.
    bool send_frame(std::span<const uint8_t> frame);
    bool send(proto::FrameType type, const google::protobuf::MessageLite& message);
    // Largest frame (header + body) that fits one datagram.
    size_t max_frame_bytes() const { return settings_.max_datagram_bytes - proto::kPacketHeaderBytes; }

    void flush() override;

    uint64_t epoch() const { return epoch_; }
    uint64_t next_sequence() const { return next_sequence_; }
    const BackboneSenderCounters& counters() const { return counters_; }

private:
    void send_packet();
    void send_heartbeat();

    Settings settings_;
    uint64_t epoch_;
    UdpSocket socket_;
    FlushScheduler flusher_;
    Timer heartbeat_timer_;
    proto::PacketBuilder packet_;
    uint64_t next_sequence_ = 1;
    BackboneSenderCounters counters_;
    std::shared_ptr<spdlog::logger> log_;
    log::RateLimiter failure_log_limit_;
};

}  // namespace mdcast::distributor
