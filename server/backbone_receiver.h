// The server's end of the backbone: joins the multicast group, validates every
// datagram, tracks sequence and epoch, hands messages to the server, and sends
// control requests (image requests, directory queries) to the distributor.
//
// The distributor's control address is learnt from its heartbeats (source IP of
// the datagram + the advertised control port), so servers need no upstream
// address in their configuration.
#pragma once

#include <event2/event.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "common/event_loop.h"
#include "common/logging.h"
#include "common/udp_socket.h"
#include "proto/backbone_packet.h"
#include "server/sequence_tracker.h"
#include "wire/backbone.pb.h"

namespace mdcast::server {

struct BackboneReceiverCounters {
    uint64_t packets_received = 0;
    uint64_t bytes_received = 0;
    uint64_t messages_received = 0;
    uint64_t heartbeats_received = 0;
    uint64_t malformed_packets = 0;
    uint64_t truncated_packets = 0;
    uint64_t control_packets_sent = 0;
    uint64_t image_requests_sent = 0;
    uint64_t control_send_failures = 0;
};

class BackboneReceiver {
public:
    class Handler {
    public:
        // A data message, in packet order. `frame.whole` may be forwarded as is.
        virtual void on_backbone_message(const proto::Frame& frame) = 0;
        // Packets [from, to) of the current epoch are lost.
        virtual void on_backbone_gap(uint64_t from, uint64_t to) = 0;
        // A new source epoch: the distributor restarted (or a first join when
        // previous_epoch is 0). Every item id of the old epoch is void.
        virtual void on_source_reset(uint64_t previous_epoch, uint64_t epoch) = 0;
        // The distributor's control address became known (first heartbeat of an epoch).
        virtual void on_control_ready() = 0;

    protected:
        virtual ~Handler() = default;
    };

    struct Settings {
        MulticastEndpoint endpoint;
        uint32_t receive_buffer_bytes = 0;
        uint32_t max_datagram_bytes = 65507;
    };

    BackboneReceiver(EventLoop& loop, const Settings& settings, Handler& handler);
    ~BackboneReceiver();

    bool control_ready() const { return control_address_.has_value(); }
    // Queue control messages; they leave packed in datagrams at flush_control().
    // Dropped (and false returned) when the control address is not known yet.
    bool request_image(const wire::v1::ImageRequest& request);
    bool query_directory();
    void flush_control();

    uint64_t epoch() const { return tracker_.epoch(); }
    const BackboneReceiverCounters& counters() const { return counters_; }
    const SequenceCounters& sequence_counters() const { return tracker_.counters(); }

private:
    static void on_readable(int, short, void* self);
    void handle_datagram(std::span<const uint8_t> datagram, const sockaddr_in& from, bool truncated);
    bool handle_heartbeat(std::span<const uint8_t> datagram, const proto::PacketHeader& header,
                          const sockaddr_in& from);
    void deliver_messages(std::span<const uint8_t> datagram, const proto::PacketHeader& header,
                          const sockaddr_in& from);
    void drop_malformed(const sockaddr_in& from, std::string_view why);
    void apply_verdict(const SequenceTracker::Result& result, uint64_t previous_epoch);
    bool queue_control(proto::FrameType type, const google::protobuf::MessageLite& message);

    Settings settings_;
    Handler& handler_;
    UdpSocket socket_;
    UdpSocket control_socket_;
    event* event_;
    DatagramBatch batch_;
    SequenceTracker tracker_;
    std::optional<sockaddr_in> control_address_;
    proto::PacketBuilder control_packet_;
    Trigger control_flush_;
    BackboneReceiverCounters counters_;
    std::shared_ptr<spdlog::logger> log_;
    log::RateLimiter malformed_log_limit_;
};

}  // namespace mdcast::server
