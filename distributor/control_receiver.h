// Receives control datagrams from servers (image requests, directory queries,
// NAKs, interest in interactive items, clients' posts) on the distributor's unicast control
// port. Malformed datagrams are dropped and counted; they never affect other
// servers.
#pragma once

#include <event2/event.h>

#include <cstdint>
#include <functional>

#include "common/logging.h"
#include "common/net/event_loop.h"
#include "common/net/loss_injector.h"
#include "common/net/udp_socket.h"
#include "proto/frame.h"
#include "proto/packet_signer.h"
#include "wire/backbone.pb.h"
#include "wire/common.pb.h"
#include "wire/post.pb.h"

namespace mdcast::distributor {

struct ControlCounters {
    uint64_t packets_received = 0;
    uint64_t image_requests = 0;
    uint64_t directory_queries = 0;
    uint64_t naks = 0;
    uint64_t rtt_probes = 0;
    uint64_t interest_messages = 0;  // wire Interest: renewals and releases
    uint64_t posts = 0;              // wire Post: clients' posts a server forwards
    uint64_t post_answers = 0;       // PostAck answers sent by unicast to the posting server
    uint64_t malformed = 0;
    uint64_t injected_drops = 0;     // testing.loss on control receive
    uint64_t bad_signatures = 0;     // unsigned or forged, with backbone keys configured
    uint64_t not_found_replies = 0;  // NOT_FOUND answers sent by unicast to the asking server
};

class ControlReceiver {
  public:
    class Handler {
      public:
        // `from`: the asking server's control socket, for answers meant only for it.
        virtual void on_image_request(const ::mdcast::wire::v1::ImageRequest& request,
                                      const sockaddr_in& from) = 0;
        virtual void on_directory_query() = 0;
        virtual void on_nak(const ::mdcast::wire::v1::Nak& nak, const sockaddr_in& from) = 0;
        // `from`: the sender's control socket. Leases key on the message's
        // server_id; the address stands in only for servers that send none.
        virtual void on_interest(const ::mdcast::wire::v1::Interest& interest,
                                 const sockaddr_in& from) = 0;
        // `from`: the posting server's control socket, where its answer goes.
        virtual void on_post(const ::mdcast::wire::v1::Post& post, const sockaddr_in& from) = 0;

      protected:
        virtual ~Handler() = default;
    };

    // With `signer`, unsigned or forged control packets are dropped and counted.
    ControlReceiver(EventLoop& loop, const std::string& address, uint16_t port, Handler& handler,
                    const LossSettings& receive_loss = {}, const PacketSigner* signer = nullptr);
    ~ControlReceiver();

    uint16_t port() const;
    // Answers an image request that names nothing known (NOT_FOUND) to the asking
    // server alone: one server's unknown names never reach the multicast group.
    void reply_not_found(const ::mdcast::wire::v1::ItemStatus& status, const sockaddr_in& to);
    // The answer to a post, to the posting server's control socket alone.
    void reply_post_ack(const ::mdcast::wire::v1::PostAck& ack, const sockaddr_in& to);
    const ControlCounters& counters() const { return counters_; }

  private:
    static void on_readable(int, short, void* self);
    void handle(std::span<const uint8_t> datagram, const sockaddr_in& from);
    bool dispatch(const proto::Frame& frame, const sockaddr_in& from);
    void echo_rtt_probe(const ::mdcast::wire::v1::RttProbe& probe, const sockaddr_in& to);
    void reply(proto::FrameType type, const google::protobuf::MessageLite& message,
               const sockaddr_in& to);

    UdpSocket socket_;
    Handler& handler_;
    event* event_;
    DatagramBatch batch_;
    LossInjector receive_loss_;
    const PacketSigner* signer_;
    ControlCounters counters_;
    std::shared_ptr<spdlog::logger> log_;
    log::RateLimiter malformed_log_limit_;
};

}  // namespace mdcast::distributor
