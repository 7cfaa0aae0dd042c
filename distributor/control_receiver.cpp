#include "distributor/control_receiver.h"

#include <arpa/inet.h>

#include "proto/backbone_packet.h"

namespace mdcast::distributor {

ControlReceiver::ControlReceiver(EventLoop& loop, const std::string& address, uint16_t port,
                                 Handler& handler, const LossSettings& receive_loss,
                                 const PacketSigner* signer)
    : socket_(UdpSocket::unicast(address, port, 1 << 20)),
      handler_(handler),
      event_(event_new(loop.base(), socket_.fd(), EV_READ | EV_PERSIST, &on_readable, this)),
      batch_(32, proto::kMaxDatagramBytes),
      receive_loss_(receive_loss),
      signer_(signer),
      log_(log::get("control")) {
    event_add(event_, nullptr);
    if (receive_loss_.active()) {
        log_->warn("TESTING: dropping control packets on receive ({})", receive_loss.describe());
    }
}

ControlReceiver::~ControlReceiver() {
    event_free(event_);
}

uint16_t ControlReceiver::port() const {
    return ntohs(socket_.local_address().sin_port);
}

void ControlReceiver::on_readable(int, short, void* self) {
    auto* receiver = static_cast<ControlReceiver*>(self);
    const size_t n = receiver->batch_.receive(receiver->socket_.fd());
    for (size_t i = 0; i < n; ++i) {
        receiver->handle(receiver->batch_.datagram(i), receiver->batch_.source(i));
    }
}

void ControlReceiver::handle(std::span<const uint8_t> datagram, const sockaddr_in& from) {
    ++counters_.packets_received;
    if (receive_loss_.drop()) {
        ++counters_.injected_drops;
        return;
    }
    proto::PacketHeader header;
    proto::PacketError error = proto::decode_packet_header(datagram, header);
    if (error == proto::PacketError::kNone && header.type != proto::PacketType::kControl) {
        error = proto::PacketError::kBadType;
    }
    if (error == proto::PacketError::kNone && signer_ &&
        (!(header.flags & proto::kPacketFlagSigned) || !signer_->verify_datagram(datagram))) {
        ++counters_.bad_signatures;
        return;  // unsigned or forged: never acted on
    }
    if (error == proto::PacketError::kNone) {
        proto::PacketMessageIterator messages(datagram, header, proto::kBackboneControlTypes);
        proto::Frame frame;
        for (;;) {
            const auto result = messages.next(frame);
            if (result == proto::PacketMessageIterator::Result::kEnd) return;
            if (result == proto::PacketMessageIterator::Result::kError || !dispatch(frame, from))
                break;
        }
        error = proto::PacketError::kBadMessage;
    }
    ++counters_.malformed;
    uint64_t suppressed = 0;
    if (malformed_log_limit_.allow(suppressed)) {
        log_->warn("dropped malformed control packet from {}: {} ({} more suppressed)",
                   format_ipv4(from), proto::packet_error_name(error), suppressed);
    }
}

// One control message; false when its body is malformed.
bool ControlReceiver::dispatch(const proto::Frame& frame, const sockaddr_in& from) {
    const auto parse = [&](google::protobuf::MessageLite& message) {
        return message.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()));
    };
    switch (frame.type) {
        case proto::FrameType::kDirectoryQuery:
            ++counters_.directory_queries;
            handler_.on_directory_query();
            return true;
        case proto::FrameType::kImageRequest: {
            wire::v1::ImageRequest request;
            if (!parse(request)) return false;
            ++counters_.image_requests;
            handler_.on_image_request(request, from);
            return true;
        }
        case proto::FrameType::kNak: {
            wire::v1::Nak nak;
            if (!parse(nak)) return false;
            ++counters_.naks;
            handler_.on_nak(nak, from);
            return true;
        }
        case proto::FrameType::kInterest: {
            wire::v1::Interest interest;
            if (!parse(interest)) return false;
            ++counters_.interest_messages;
            handler_.on_interest(interest, from);
            return true;
        }
        case proto::FrameType::kPost: {
            wire::v1::Post post;
            if (!parse(post)) return false;
            ++counters_.posts;
            handler_.on_post(post, from);
            return true;
        }
        case proto::FrameType::kRttProbe: {
            wire::v1::RttProbe probe;
            if (!parse(probe)) return false;
            ++counters_.rtt_probes;
            echo_rtt_probe(probe, from);
            return true;
        }
        default:
            return false;
    }
}

// Echoed at once by unicast to the prober's control socket: the round trip a
// NAK and its repair take, without the multicast group in the way.
void ControlReceiver::echo_rtt_probe(const wire::v1::RttProbe& probe, const sockaddr_in& to) {
    reply(proto::FrameType::kRttEcho, probe, to);
}

void ControlReceiver::reply_not_found(const wire::v1::ItemStatus& status, const sockaddr_in& to) {
    ++counters_.not_found_replies;
    reply(proto::FrameType::kItemStatus, status, to);
}

void ControlReceiver::reply_post_ack(const wire::v1::PostAck& ack, const sockaddr_in& to) {
    ++counters_.post_answers;
    reply(proto::FrameType::kPostAck, ack, to);
}

// One message in one signed control-reply datagram (names are bounded, so it fits).
void ControlReceiver::reply(proto::FrameType type, const google::protobuf::MessageLite& message,
                            const sockaddr_in& to) {
    const size_t trailer = signer_ ? kSignatureBytes : 0;
    proto::PacketBuilder packet(proto::kPacketHeaderBytes + proto::frame_bytes(message) + trailer,
                                trailer);
    packet.add(type, message);
    socket_.send_to(finish_packet(packet, proto::PacketType::kControlReply, 0, 0, signer_), to);
}

}  // namespace mdcast::distributor
