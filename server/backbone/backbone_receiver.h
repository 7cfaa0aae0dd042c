// The server's end of the backbone. Joins one or more multicast groups and
// keeps one BackboneSource per distributor heard on them, told apart by the
// distributor id in the top bits of each packet's epoch (proto/source_ids.h):
// a new, larger epoch with a known id is that distributor restarting (an older
// one is a replay and is dropped, unless the source has gone silent); another id is
// another distributor, kept apart (its own ordering, repair, control address
// and silence detection) rather than mistaken for a restart. A distributor
// heard on several groups (redundant A/B paths) feeds one source, so the first
// copy of each packet wins and the other is dropped as a duplicate.
//
// Each source runs LossRecovery, so the server sees every message of every
// distributor once and in order, or an explicit "unrecoverable" range. Control
// traffic (NAKs, image requests, directory queries, RTT probes) goes to each
// distributor's control address, learnt from its heartbeats.
//
// testing.loss.* lives in the sockets (common/net/lossy_socket.h): a dropped
// datagram never reaches this code.
#pragma once

#include <event2/event.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "common/latency_histogram.h"
#include "common/logging.h"
#include "common/net/event_loop.h"
#include "common/net/loss_injector.h"
#include "common/net/lossy_socket.h"
#include "common/net/udp_socket.h"
#include "proto/backbone_packet.h"
#include "proto/limits.h"
#include "proto/packet_signer.h"
#include "proto/server_id.h"
#include "server/backbone/backbone_counters.h"
#include "server/backbone/backbone_source.h"
#include "server/backbone/loss_recovery.h"
#include "server/upstream.h"
#include "wire/backbone.pb.h"

namespace mdcast::server {

// The multicast backbone as the server's upstream (server/upstream.h).
class BackboneReceiver final : public Upstream {
  public:
    struct Settings {
        std::vector<MulticastEndpoint> groups;  // at least one
        uint32_t receive_buffer_bytes = 0;
        uint32_t max_datagram_bytes = proto::kMaxDatagramBytes;
        uint32_t max_message_bytes = 262144;  // put together from parts, at most
        uint32_t max_sources = 16;
        LossRecoverySettings recovery;
        uint32_t source_silent_ms = 3000;
        uint32_t rtt_probe_interval_ms = 1000;
        LossSettings receive_loss;       // testing only: on each group socket
        LossSettings control_send_loss;  // testing only: on the control socket
        // Require and produce signatures when set; shared with whoever loaded the keys.
        std::shared_ptr<const PacketSigner> signer;
    };

    BackboneReceiver(EventLoop& loop, const Settings& settings, Handler& handler);
    ~BackboneReceiver() override;

#include "proto/server_id.h"
    // Upstream
    std::vector<uint16_t> sources() const override;  // every distributor heard, ready or not
    bool ready(uint16_t source) const override;      // its control address is known
    bool silent(uint16_t source) const override;
    // Control messages leave packed in datagrams at the end of the loop iteration.
    bool request_image(uint16_t source, const ::mdcast::wire::v1::ImageRequest& request) override;
    bool query_directory(uint16_t source) override;
    bool send_interest(uint16_t source, ::mdcast::wire::v1::Interest& interest) override;
    bool send_post(uint16_t source, ::mdcast::wire::v1::Post& post) override;
    void register_metrics(MetricsRegistry& metrics) const override;  // backbone_metrics.cpp

    const BackboneReceiverCounters& counters() const {
        return counters_;
    }
    LossRecoveryCounters recovery_counters() const;  // summed over sources
    const LatencyHistogram& repair_times() const {
        return repair_times_;
    }
    const LatencyHistogram& round_trips() const {
        return round_trips_;
    }
    uint64_t kernel_drops() const;
    uint64_t injected_drops() const;  // testing.loss, every socket

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
    struct Group {
        BackboneReceiver* receiver;
        LossySocket socket;
        event* read_event = nullptr;
        uint64_t kernel_drops = 0;
    };

    static void on_readable(int, short, void* group);
    static void on_control_readable(int, short, void* self);

    void join(EventLoop& loop, const MulticastEndpoint& endpoint, uint64_t index);
    void read_group(Group& group);
    bool handle_heartbeat(std::span<const uint8_t> datagram, const proto::PacketHeader& header,
                          const sockaddr_in& from, int64_t now);
    bool find_frames(std::span<const uint8_t> datagram, const proto::PacketHeader& header);
    BackboneSource* source_for(uint64_t epoch);
    BackboneSource* find_source(uint16_t id) const;
    void drop_malformed(const sockaddr_in& from, std::string_view why);
    bool authentic(std::span<const uint8_t> datagram, const proto::PacketHeader& header);
    void flush_control();
    void on_nak_timer();
    void send_rtt_probes();
    void check_silence();
    void arm_silence_check(int64_t now);
    int64_t silence_period_ns() const;

    Settings settings_;
    Handler& handler_;
    std::shared_ptr<spdlog::logger> log_;
    const uint64_t server_id_ = proto::new_server_id();  // before source_context_
    std::vector<std::unique_ptr<Group>> groups_;
    LossySocket control_socket_;
    event* control_event_;
    DatagramBatch batch_;
    DatagramBatch control_batch_;
    Trigger control_flush_;
    BackboneReceiverCounters counters_;
    LatencyHistogram repair_times_;
    LatencyHistogram round_trips_;
    log::RateLimiter malformed_log_limit_;
    log::RateLimiter loss_log_limit_;
    BackboneSourceContext source_context_;  // after all it names
    std::map<uint16_t, std::unique_ptr<BackboneSource>> sources_;
    PacketFrames frames_;  // the messages of the packet being validated
    Timer nak_timer_;
    int64_t nak_timer_deadline_ = INT64_MAX;
    Timer rtt_timer_;
    Timer silence_timer_;
    int64_t silence_due_ns_ = 0;  // when the armed silence check should run
};

}  // namespace mdcast::server
