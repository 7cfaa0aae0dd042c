// The server's end of the backbone: joins the multicast group, validates every
// datagram, and runs LossRecovery so the server sees every message once, in
// order, or an explicit "unrecoverable" for what could not be repaired. It
// sends the control traffic (NAKs, image requests, directory queries, RTT
// probes) to the distributor's control address, learnt from its heartbeats
// (source address of the datagram + advertised port), so a server needs no
// upstream address in its configuration.
#pragma once

#include <event2/event.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "common/event_loop.h"
#include "common/latency_histogram.h"
#include "common/logging.h"
#include "common/loss_injector.h"
#include "common/udp_socket.h"
#include "proto/backbone_packet.h"
#include "server/loss_recovery.h"
#include "wire/backbone.pb.h"

namespace mdcast::server {

struct BackboneReceiverCounters {
    uint64_t packets_received = 0;
    uint64_t bytes_received = 0;
    uint64_t messages_received = 0;
    uint64_t repairs_received = 0;   // packets flagged as retransmissions
    uint64_t heartbeats_received = 0;
    uint64_t malformed_packets = 0;
    uint64_t truncated_packets = 0;
    uint64_t control_packets_sent = 0;
    uint64_t image_requests_sent = 0;
    uint64_t control_send_failures = 0;
    uint64_t injected_drops = 0;     // testing.loss
    uint64_t source_silences = 0;
};

class BackboneReceiver final : private LossRecovery::Handler {
public:
    class Handler {
    public:
        // A data message, in packet order, exactly once. `frame.whole` may be forwarded as is.
        virtual void on_backbone_message(const proto::Frame& frame) = 0;
        // Packets [from, to) of the current epoch are lost for good.
        virtual void on_backbone_unrecoverable(uint64_t from, uint64_t to) = 0;
        // A new source epoch: the distributor restarted (previous 0: first join).
        // Every item id of the old epoch is void.
        virtual void on_source_reset(uint64_t previous_epoch, uint64_t epoch) = 0;
        // The distributor's control address became known (first heartbeat of an epoch).
        virtual void on_control_ready() = 0;
        // Nothing heard from the distributor for source_silent_ms (true), or heard again (false).
        virtual void on_source_silent(bool silent) = 0;

    protected:
        virtual ~Handler() = default;
    };

    struct Settings {
        MulticastEndpoint endpoint;
        uint32_t receive_buffer_bytes = 0;
        uint32_t max_datagram_bytes = 65507;
        LossRecoverySettings recovery;
        uint32_t source_silent_ms = 3000;
        uint32_t rtt_probe_interval_ms = 1000;
        LossSettings receive_loss;       // testing only
        LossSettings control_send_loss;  // testing only
    };

    BackboneReceiver(EventLoop& loop, const Settings& settings, Handler& handler);
    ~BackboneReceiver() override;

    bool control_ready() const { return control_address_.has_value(); }
    // Queue control messages; they leave packed in datagrams at the end of the
    // loop iteration. Dropped (false) when the control address is not known yet.
    bool request_image(const wire::v1::ImageRequest& request);
    bool query_directory();
    void flush_control();

    uint64_t epoch() const { return recovery_.epoch(); }
    const BackboneReceiverCounters& counters() const { return counters_; }
    const LossRecoveryCounters& recovery_counters() const { return recovery_.counters(); }
    const LatencyHistogram& repair_times() const { return repair_times_; }
    const LatencyHistogram& round_trips() const { return round_trips_; }
    uint64_t kernel_drops() const { return batch_.kernel_drops(); }

private:
    static void on_readable(int, short, void* self);
    static void on_control_readable(int, short, void* self);
    void handle_datagram(std::span<const uint8_t> datagram, const sockaddr_in& from, bool truncated,
                         int64_t now);
    bool handle_heartbeat(std::span<const uint8_t> datagram, const proto::PacketHeader& header,
                          const sockaddr_in& from, int64_t now);
    bool valid_data(std::span<const uint8_t> datagram, const proto::PacketHeader& header);
    void drop_malformed(const sockaddr_in& from, std::string_view why);
    bool queue_control(proto::FrameType type, const google::protobuf::MessageLite& message);
    void schedule_naks();
    void on_nak_timer();
    void send_rtt_probe();
    void note_round_trip(int64_t rtt_ns);
    void check_silence();
    void heard_from_source(int64_t now);

    // LossRecovery::Handler
    void on_deliver(uint64_t sequence, std::span<const uint8_t> datagram) override;
    void on_unrecoverable(uint64_t from, uint64_t to) override;
    void on_repaired(uint64_t sequence, int64_t recovery_ns) override;
    void on_source_reset(uint64_t previous_epoch, uint64_t epoch) override;

    Settings settings_;
    Handler& handler_;
    UdpSocket socket_;
    UdpSocket control_socket_;
    event* event_;
    event* control_event_;
    DatagramBatch batch_;
    DatagramBatch control_batch_;
    LossRecovery recovery_;
    std::optional<sockaddr_in> control_address_;
    proto::PacketBuilder control_packet_;
    Trigger control_flush_;
    Timer nak_timer_;
    int64_t nak_timer_deadline_ = INT64_MAX;
    Timer rtt_timer_;
    Timer silence_timer_;
    int64_t last_heard_ns_ = 0;
    bool silent_ = false;
    LossInjector receive_loss_;
    LossInjector control_send_loss_;
    BackboneReceiverCounters counters_;
    LatencyHistogram repair_times_;
    LatencyHistogram round_trips_;
    int64_t smoothed_rtt_ns_ = 0;
    std::shared_ptr<spdlog::logger> log_;
    log::RateLimiter malformed_log_limit_;
    log::RateLimiter loss_log_limit_;
};

}  // namespace mdcast::server
