// A multicast backbone for the distributor's unit tests, on loopback (TTL 0,
// a group and port of its own), and a tap that joins its group and reads back
// the data messages it sent.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/net/udp_socket.h"
#include "distributor/backbone_out.h"
#include "distributor/distributor_config.h"
#include "proto/backbone_packet.h"
#include "proto/frame.h"

namespace mdcast::distributor::testing {

// A UDP port nobody else on this host uses right now.
inline uint16_t free_udp_port() {
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    socklen_t length = sizeof address;
    getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    ::close(fd);
    return ntohs(address.sin_port);
}

// The distributor's defaults, with a backbone of the test's own on this host.
inline DistributorConfig loopback_config(const std::string& group) {
    DistributorConfig config = distributor_schema().defaults();
    config.backbone_group = group;
    config.backbone_port = free_udp_port();
    config.backbone_interface = "127.0.0.1";
    config.backbone_ttl = 0;
    config.backbone_control_port = 0;              // any free port
    config.backbone_segmentation_offload = false;  // one datagram per message, unpadded
    return config;
}

// The distributor's side of a backbone no server talks to (tests of what goes
// out): nothing is asked of it.
class NoServersAsk : public BackboneOut::Handler {
  public:
    std::optional<::mdcast::wire::v1::ItemStatus> on_image_request(
        const ::mdcast::wire::v1::ImageRequest&, ServerId) override {
        return std::nullopt;
    }
    void on_directory_query() override {}
    void on_interest(const ::mdcast::wire::v1::Interest&, ServerId) override {}
    void on_post(const ::mdcast::wire::v1::Post&, ServerId) override {}
    void on_congestion(bool) override {}
};

struct BackboneMessage {
    proto::FrameType type;
    std::string body;
    std::string whole;  // header + body, as the backbone carried it
};

// Joins the config's group before the backbone sends anything.
class BackboneTap {
  public:
    explicit BackboneTap(const DistributorConfig& config)
        : socket_(UdpSocket::multicast_receiver(config.multicast_endpoint(), 1 << 20)) {}

    // Every data message that arrived (heartbeats skipped).
    std::vector<BackboneMessage> messages() {
        std::vector<BackboneMessage> out;
        for (size_t n = batch_.receive(socket_.fd()); n > 0; n = batch_.receive(socket_.fd())) {
            for (size_t i = 0; i < n; ++i) collect(batch_.datagram(i), out);
        }
        return out;
    }

  private:
    static void collect(std::span<const uint8_t> datagram, std::vector<BackboneMessage>& out) {
        proto::PacketHeader header;
        REQUIRE(proto::decode_packet_header(datagram, header) == proto::PacketError::kNone);
        if (header.type != proto::PacketType::kData) return;
        proto::PacketMessageIterator messages(datagram, header, proto::kBackboneDataTypes);
        proto::Frame frame;
        while (messages.next(frame) == proto::PacketMessageIterator::Result::kFrame) {
            out.push_back({frame.type, std::string(frame.body.begin(), frame.body.end()),
                           std::string(frame.whole.begin(), frame.whole.end())});
        }
    }

    UdpSocket socket_;
    DatagramBatch batch_{64, 65536};
};

}  // namespace mdcast::distributor::testing
