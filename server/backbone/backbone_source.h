// One distributor as a server's backbone receiver follows it: its epoch and
// loss recovery, its control address and the control packets (NAKs, image
// requests, probes) queued for it, its round-trip time, its silence.
//
// A data packet's messages are found once, when the receiver validates it on
// arrival; the source hands them on from there when LossRecovery delivers the
// packet, at once or after a gap (offsets into the packet survive its copy into
// the hold buffer), without reading the packet again.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "common/latency_histogram.h"
#include "common/logging.h"
#include "common/net/event_loop.h"
#include "common/net/lossy_socket.h"
#include "proto/backbone_packet.h"
#include "proto/message_parts.h"
#include "proto/packet_signer.h"
#include "server/backbone/backbone_counters.h"
#include "server/backbone/loss_recovery.h"
#include "server/upstream.h"

namespace mdcast::server {

// Where one message lies in its packet: offsets survive the packet being
// copied into LossRecovery's hold buffer.
struct FrameRef {
    proto::FrameType type;
    uint32_t offset;       // of the frame header
    uint32_t size;         // header + body
    uint32_t body_offset;  // of the body
};
using PacketFrames = std::vector<FrameRef>;

// What every source of one receiver shares; the receiver owns all of it.
struct BackboneSourceContext {
    Upstream::Handler& handler;
    LossySocket& control_socket;
    const PacketSigner* signer;
    Trigger& control_flush;  // fired when a control packet is queued
    BackboneReceiverCounters& counters;
    LatencyHistogram& repair_times;
    log::RateLimiter& loss_log_limit;
    spdlog::logger& log;
    uint64_t server_id;        // this server's identity in its control messages
    size_t max_message_bytes;  // backbone.max_message_bytes
};

class BackboneSource final : private LossRecovery::Handler {
  public:
    BackboneSource(BackboneSourceContext& context, uint16_t id,
                   const LossRecoverySettings& settings);

    uint16_t id() const { return id_; }
    const LossRecovery& recovery() const { return recovery_; }
    bool silent() const { return silent_; }
    int64_t last_heard_ns() const { return last_heard_ns_; }
    const std::optional<sockaddr_in>& control_address() const { return control_address_; }
    void set_control_address(const sockaddr_in& address) { control_address_ = address; }

    // Epochs grow with the distributor's start time: an older one than the
    // epoch followed is a replayed packet from before a restart. Only a silent
    // source (its host's clock stepped back across a restart) may go back.
    bool refuses_epoch(uint64_t epoch);
    void heard(int64_t now);
    // Silence checks: `now` counts as heard (the process had stalled), or the
    // source is silent from now on (the handler is told).
    void reset_heard(int64_t now) { last_heard_ns_ = now; }
    void go_silent();

    // A validated data packet and its messages, in whatever order it arrived.
    void on_data(const proto::PacketHeader& header, std::span<const uint8_t> datagram,
                 const PacketFrames& frames, int64_t now);
    void on_heartbeat(uint64_t epoch, uint64_t next_sequence, uint64_t trailing_edge, int64_t now) {
        recovery_.on_heartbeat(epoch, next_sequence, trailing_edge, now);
    }
    int64_t next_deadline() const { return recovery_.next_deadline(); }
    // The NAK timer: asks again for what is still missing.
    void on_nak_timer(int64_t now);

    // Queues a control message for the end of the loop iteration; false when the
    // control address is not known yet or the message cannot fit a datagram.
    bool queue_control(proto::FrameType type, const google::protobuf::MessageLite& message);
    void flush_control();
    // Smoothed like TCP's SRTT (gain 1/8); NAK retries wait at least two of them.
    void note_round_trip(int64_t rtt_ns);

  private:
    void send_naks(const LossRecovery::Ranges& ranges);
    void deliver(const PacketFrames& frames, std::span<const uint8_t> datagram);
    void take_part(const proto::Frame& part);
    void refuse_parts(const std::string& why);
    void forget_frames_below(uint64_t sequence);

    // LossRecovery::Handler
    void on_deliver(uint64_t sequence, std::span<const uint8_t> datagram) override;
    void on_unrecoverable(uint64_t from, uint64_t to) override;
    void on_repaired(uint64_t sequence, int64_t recovery_ns) override;
    void on_source_reset(uint64_t previous_epoch, uint64_t epoch) override;

    BackboneSourceContext& context_;
    const uint16_t id_;
    LossRecovery recovery_;
    std::optional<sockaddr_in> control_address_;
    proto::PacketBuilder control_packet_;
    int64_t last_heard_ns_ = 0;
    bool silent_ = false;
    int64_t smoothed_rtt_ns_ = 0;
    // The messages of the packet arriving now, until it is delivered, and of
    // each packet held after a gap, by sequence (bounded by what LossRecovery holds).
    const PacketFrames* arriving_ = nullptr;
    uint64_t arriving_sequence_ = 0;
    std::map<uint64_t, PacketFrames> held_frames_;
    proto::MessageAssembler parts_;  // a message larger than a datagram, being put together
};

}  // namespace mdcast::server
