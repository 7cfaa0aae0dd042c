// The multicast backbone, the first "backbone out" (distributor/backbone_out.h):
// BackboneSender multicasts the messages (numbered, kept for repair,
// heartbeats while idle) and ControlReceiver takes the servers' control
// datagrams on the unicast control port, both signed with the backbone keys
// when they are configured.
//
// NAKs stay inside: they are answered by BackboneSender from its retransmit
// window, limited per NAK source address (an address the attacker cannot
// choose as freely as an id it writes into the message). Image requests,
// directory queries and interest go to the Handler with the asking server's
// ServerId: the wire server_id, or for a server that sends none, its control
// socket's address and port (IPv4 << 16 | port) as before the field existed.
// A NOT_FOUND the handler returns goes by unicast to the asker's control socket.
#pragma once

#include <memory>

#include "distributor/backbone_out.h"
#include "distributor/backbone_sender.h"
#include "distributor/control_receiver.h"
#include "distributor/distributor_config.h"
#include "proto/packet_signer.h"

namespace mdcast::distributor {

// The ServerId of a control message's sender: `wire_id` when the server sent
// one, else derived from the datagram's source address and port.
ServerId server_id_of(uint64_t wire_id, const sockaddr_in& from);

class MulticastBackbone final : public BackboneOut, private ControlReceiver::Handler {
  public:
    // Binds the control port and the multicast sockets; throws
    // std::runtime_error naming what failed (a socket, a key file).
    MulticastBackbone(EventLoop& loop, const DistributorConfig& config, uint64_t epoch,
                      BackboneOut::Handler& handler);

    bool send(proto::FrameType type, const google::protobuf::MessageLite& message) override {
        return sender_.send(type, message);
    }
    bool send_frame(std::span<const uint8_t> frame) override { return sender_.send_frame(frame); }
    size_t max_frame_bytes() const override { return sender_.max_message_bytes(); }
    void flush() override { sender_.flush(); }
    void flush_after(Flushable& writer) override { sender_.flush_after(writer); }
    uint64_t epoch() const override { return sender_.epoch(); }
    bool congested() const override { return sender_.congested(); }
    void register_metrics(MetricsRegistry& metrics) const override;
    std::string describe() const override { return description_; }

    uint16_t control_port() const { return control_.port(); }

  private:
    void on_image_request(const ::mdcast::wire::v1::ImageRequest& request,
                          const sockaddr_in& from) override;
    void on_directory_query() override { handler_.on_directory_query(); }
    void on_nak(const ::mdcast::wire::v1::Nak& nak, const sockaddr_in& from) override;
    void on_interest(const ::mdcast::wire::v1::Interest& interest,
                     const sockaddr_in& from) override;
    void register_control_metrics(MetricsRegistry& metrics) const;

    BackboneOut::Handler& handler_;
    std::unique_ptr<PacketSigner> signer_;  // before control_ and sender_, which use it
    ControlReceiver control_;
    BackboneSender sender_;
    std::string description_;
};

}  // namespace mdcast::distributor
