// The server's end of the backbone. Joins one or more multicast groups and
// keeps one Source per distributor heard on them, told apart by the
// distributor id in the top bits of each packet's epoch (proto/source_ids.h):
// a new, larger epoch with a known id is that distributor restarting (an older
// one is a replay and is dropped, unless the source has gone silent); another id is
// another distributor, kept apart (its own ordering, repair, control address
// and silence detection) rather than mistaken for a restart. A distributor
// heard on several groups (redundant A/B paths) feeds one Source, so the first
// copy of each packet wins and the other is dropped as a duplicate.
//
// Each Source runs LossRecovery, so the server sees every message of every
// distributor once and in order, or an explicit "unrecoverable" range. Control
// traffic (NAKs, image requests, directory queries, RTT probes) goes to each
// distributor's control address, learnt from its heartbeats.
#pragma once

#include <event2/event.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "common/latency_histogram.h"
#include "common/logging.h"
#include "common/net/event_loop.h"
#include "common/net/loss_injector.h"
#include "common/net/udp_socket.h"
#include "proto/backbone_packet.h"
#include "proto/packet_signer.h"
#include "proto/server_id.h"
#include "server/backbone/loss_recovery.h"
#include "wire/backbone.pb.h"

namespace mdcast::server {

struct BackboneReceiverCounters {
    uint64_t packets_received = 0;
    uint64_t bytes_received = 0;
    uint64_t coalesced_packets = 0;  // arrived several to a message (UDP_GRO)
    uint64_t messages_received = 0;
    uint64_t repairs_received = 0;  // packets flagged as retransmissions
    uint64_t heartbeats_received = 0;
    uint64_t malformed_packets = 0;
    uint64_t truncated_packets = 0;
    uint64_t foreign_sources = 0;  // packets from distributors beyond max_sources
    uint64_t control_packets_sent = 0;
    uint64_t image_requests_sent = 0;
    uint64_t control_send_failures = 0;
    uint64_t injected_drops = 0;  // testing.loss
    uint64_t source_silences = 0;
    uint64_t bad_signatures = 0;  // unsigned or forged while keys are configured: dropped
    uint64_t stale_epochs = 0;    // packets of an older epoch than the one followed: dropped
    uint64_t stalls = 0;          // silence checks skipped: this process had not run (paused)
};

class BackboneReceiver {
  public:
    // Events carry the distributor id of the source they concern.
    class Handler {
      public:
        // A data message, in packet order, exactly once. `frame.whole` may be forwarded as is.
        virtual void on_backbone_message(uint16_t source, const proto::Frame& frame) = 0;
        // Packets [from, to) of the source's current epoch are lost for good.
        virtual void on_backbone_unrecoverable(uint16_t source, uint64_t from, uint64_t to) = 0;
        // A new epoch (previous 0: first heard). Item ids of the old epoch are void.
        virtual void on_source_reset(uint16_t source, uint64_t previous_epoch, uint64_t epoch) = 0;
        // The source's control address became known (first heartbeat of an epoch).
        virtual void on_control_ready(uint16_t source) = 0;
        // Nothing heard from the source for source_silent_ms (true), or heard again (false).
        virtual void on_source_silent(uint16_t source, bool silent) = 0;
        // An answer the source sent to this server alone (unicast to its control
        // socket): an ItemStatus saying a name this server asked for is not found.
        virtual void on_control_answer(uint16_t source, const proto::Frame& frame) = 0;

      protected:
        virtual ~Handler() = default;
    };

    struct Settings {
        std::vector<MulticastEndpoint> groups;  // at least one
        uint32_t receive_buffer_bytes = 0;
        uint32_t max_datagram_bytes = 65507;
        uint32_t max_sources = 16;
        LossRecoverySettings recovery;
        uint32_t source_silent_ms = 3000;
        uint32_t rtt_probe_interval_ms = 1000;
        LossSettings receive_loss;             // testing only
        LossSettings control_send_loss;        // testing only
        const PacketSigner* signer = nullptr;  // require and produce signatures when set
    };

    BackboneReceiver(EventLoop& loop, const Settings& settings, Handler& handler);
    ~BackboneReceiver();

    bool control_ready(uint16_t source) const;
    std::vector<uint16_t> sources() const;  // every distributor heard, ready or not
    bool silent(uint16_t source) const;
    // Queue control messages for a source; they leave packed in datagrams at the
    // end of the loop iteration. False when its control address is not known yet.
    bool request_image(uint16_t source, const wire::v1::ImageRequest& request);
    bool query_directory(uint16_t source);
    // Interest in interactive items, stamped with the source's current epoch.
    bool send_interest(uint16_t source, wire::v1::Interest& interest);
    // This server's identity in its control messages (proto/server_id.h).
    uint64_t server_id() const { return server_id_; }

    const BackboneReceiverCounters& counters() const { return counters_; }
    LossRecoveryCounters recovery_counters() const;  // summed over sources
    const LatencyHistogram& repair_times() const { return repair_times_; }
    const LatencyHistogram& round_trips() const { return round_trips_; }
    uint64_t kernel_drops() const;

    // One datagram as read from a group socket at time `now` (steady ns): what the
    // socket callback calls, and the entry point of the stateful fuzz target
    // (tests/fuzz/backbone_receiver_fuzz.cpp), which has no socket to read from.
    void handle_datagram(std::span<const uint8_t> datagram, const sockaddr_in& from, bool truncated,
                         int64_t now);
    // Arms the NAK timer for what handle_datagram found missing.
    void schedule_naks();
    // One datagram read from the control socket (RTT echoes, NOT_FOUND answers);
    // public for the same fuzz target.
    void handle_control_reply(std::span<const uint8_t> datagram, const sockaddr_in& from,
                              int64_t now);

  private:
    class Source;
    struct Group {
        BackboneReceiver* receiver;
        UdpSocket socket;
        event* read_event = nullptr;
        uint64_t kernel_drops = 0;
    };

    static void on_readable(int, short, void* group);
    static void on_control_readable(int, short, void* self);

    void read_group(Group& group);
    bool handle_heartbeat(std::span<const uint8_t> datagram, const proto::PacketHeader& header,
                          const sockaddr_in& from, int64_t now);
    Source* source_for(uint64_t epoch);
    void drop_malformed(const sockaddr_in& from, std::string_view why);
    bool authentic(std::span<const uint8_t> datagram, const proto::PacketHeader& header);
    void flush_control();
    void on_nak_timer();
    void send_rtt_probes();
    void check_silence();

    Settings settings_;
    Handler& handler_;
    std::vector<std::unique_ptr<Group>> groups_;
    UdpSocket control_socket_;
    event* control_event_;
    DatagramBatch batch_;
    DatagramBatch control_batch_;
    std::map<uint16_t, std::unique_ptr<Source>> sources_;
    Trigger control_flush_;
    Timer nak_timer_;
    int64_t nak_timer_deadline_ = INT64_MAX;
    Timer rtt_timer_;
    Timer silence_timer_;
    int64_t last_silence_check_ns_ = 0;
    LossInjector receive_loss_;
    LossInjector control_send_loss_;
    const uint64_t server_id_ = proto::new_server_id();
    BackboneReceiverCounters counters_;
    LatencyHistogram repair_times_;
    LatencyHistogram round_trips_;
    std::shared_ptr<spdlog::logger> log_;
    log::RateLimiter malformed_log_limit_;
    log::RateLimiter loss_log_limit_;
};

}  // namespace mdcast::server
