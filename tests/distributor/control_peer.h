// A server's end of the control conversation, for the distributor's unit tests:
// a real UDP socket on loopback that sends control packets (signed when given
// a signer) to the distributor's control port and reads what comes back by
// unicast. pump() runs the distributor's loop until something is true.
#pragma once

#include <arpa/inet.h>
#include <event2/event.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/net/event_loop.h"
#include "common/net/udp_socket.h"
#include "proto/backbone_packet.h"
#include "proto/frame.h"
#include "proto/packet_signer.h"

namespace mdcast::distributor::testing {

struct ReceivedMessage {
    proto::FrameType type;
    std::string body;
};

// Runs non-blocking passes of `loop` until `done()` or two seconds passed;
// returns done()'s last answer (it is asked once per pass: it may consume).
inline bool pump(EventLoop& loop, const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    bool finished = done();
    while (!finished && std::chrono::steady_clock::now() < deadline) {
        event_base_loop(loop.base(), EVLOOP_NONBLOCK);
        finished = done();
    }
    return finished;
}

// Runs a few passes of `loop` for what must NOT happen: gives it the chance.
inline void settle(EventLoop& loop) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    while (std::chrono::steady_clock::now() < until) event_base_loop(loop.base(), EVLOOP_NONBLOCK);
}

class ControlPeer {
  public:
    // Talks to `port` on 127.0.0.1.
    explicit ControlPeer(uint16_t port) : socket_(UdpSocket::unicast("127.0.0.1", 0, 0)) {
        to_.sin_family = AF_INET;
        to_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        to_.sin_port = htons(port);
    }

    uint16_t port() const { return ntohs(socket_.local_address().sin_port); }

    // One control packet carrying the messages added with add().
    ControlPeer& add(proto::FrameType type, const google::protobuf::MessageLite& message) {
        return add_body(type, message.SerializeAsString());
    }
    // A message with any body, well-formed or not.
    ControlPeer& add_body(proto::FrameType type, std::string body) {
        messages_.emplace_back(type, std::move(body));
        return *this;
    }
    void send(const PacketSigner* signer = nullptr, uint64_t epoch = 1) {
        proto::PacketBuilder packet(1400, signer ? kSignatureBytes : 0);
        for (const auto& [type, body] : messages_) {
            std::vector<uint8_t> frame(proto::kFrameHeaderBytes + body.size());
            proto::encode_frame_header(proto::FrameHeader{static_cast<uint32_t>(body.size()),
                                                          static_cast<uint16_t>(type), 0},
                                       frame.data());
            std::copy(body.begin(), body.end(), frame.begin() + proto::kFrameHeaderBytes);
            packet.add_frame(frame);
        }
        messages_.clear();
        send_raw(finish_packet(packet, proto::PacketType::kControl, epoch, 0, signer));
    }
    void send_raw(std::span<const uint8_t> datagram) { REQUIRE(socket_.send_to(datagram, to_)); }

    // Every message of the control replies waiting on the socket now.
    std::vector<ReceivedMessage> replies() {
        std::vector<ReceivedMessage> out;
        for (size_t n = batch_.receive(socket_.fd()); n > 0; n = batch_.receive(socket_.fd())) {
            for (size_t i = 0; i < n; ++i) collect(batch_.datagram(i), out);
        }
        return out;
    }

  private:
    static void collect(std::span<const uint8_t> datagram, std::vector<ReceivedMessage>& out) {
        proto::PacketHeader header;
        REQUIRE(proto::decode_packet_header(datagram, header) == proto::PacketError::kNone);
        REQUIRE(header.type == proto::PacketType::kControlReply);
        proto::PacketMessageIterator messages(datagram, header, proto::kBackboneControlReplyTypes);
        proto::Frame frame;
        while (messages.next(frame) == proto::PacketMessageIterator::Result::kFrame) {
            out.push_back({frame.type, std::string(frame.body.begin(), frame.body.end())});
        }
    }

    UdpSocket socket_;
    sockaddr_in to_{};
    std::vector<std::pair<proto::FrameType, std::string>> messages_;
    DatagramBatch batch_{16, 2048};
};

}  // namespace mdcast::distributor::testing
