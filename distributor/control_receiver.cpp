#include "distributor/control_receiver.h"

#include <arpa/inet.h>

#include "proto/backbone_packet.h"

namespace mdcast::distributor {

ControlReceiver::ControlReceiver(EventLoop& loop, const std::string& address, uint16_t port,
                                 Handler& handler)
    : socket_(UdpSocket::unicast(address, port, 1 << 20)),
      handler_(handler),
      event_(event_new(loop.base(), socket_.fd(), EV_READ | EV_PERSIST, &on_readable, this)),
      batch_(32, proto::kMaxDatagramBytes),
      log_(log::get("control")) {
    event_add(event_, nullptr);
}

ControlReceiver::~ControlReceiver() { event_free(event_); }

uint16_t ControlReceiver::port() const { return ntohs(socket_.local_address().sin_port); }

void ControlReceiver::on_readable(int, short, void* self) {
    auto* receiver = static_cast<ControlReceiver*>(self);
    const size_t n = receiver->batch_.receive(receiver->socket_.fd());
    for (size_t i = 0; i < n; ++i) {
        receiver->handle(receiver->batch_.datagram(i), receiver->batch_.source(i));
    }
}

void ControlReceiver::handle(std::span<const uint8_t> datagram, const sockaddr_in& from) {
    ++counters_.packets_received;
    proto::PacketHeader header;
    proto::PacketError error = proto::decode_packet_header(datagram, header);
    if (error == proto::PacketError::kNone && header.type != proto::PacketType::kControl) {
        error = proto::PacketError::kBadType;
    }
    proto::PacketMessageIterator messages(datagram, header, proto::kBackboneControlTypes);
    proto::Frame frame;
    while (error == proto::PacketError::kNone) {
        const auto result = messages.next(frame);
        if (result == proto::PacketMessageIterator::Result::kEnd) return;
        if (result == proto::PacketMessageIterator::Result::kError) {
            error = proto::PacketError::kBadMessage;
            break;
        }
        if (frame.type == proto::FrameType::kDirectoryQuery) {
            ++counters_.directory_queries;
            handler_.on_directory_query();
            continue;
        }
        wire::v1::ImageRequest request;
        if (!request.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) {
            error = proto::PacketError::kBadMessage;
            break;
        }
        ++counters_.image_requests;
        handler_.on_image_request(request);
    }
    ++counters_.malformed;
    uint64_t suppressed = 0;
    if (malformed_log_limit_.allow(suppressed)) {
        log_->warn("dropped malformed control packet from {}: {} ({} more suppressed)",
                   format_ipv4(from), proto::packet_error_name(error), suppressed);
    }
}

}  // namespace mdcast::distributor
