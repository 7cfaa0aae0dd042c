#include "server/backbone_receiver.h"

#include <arpa/inet.h>

namespace mdcast::server {

using proto::PacketMessageIterator;

BackboneReceiver::BackboneReceiver(EventLoop& loop, const Settings& settings, Handler& handler)
    : settings_(settings),
      handler_(handler),
      socket_(UdpSocket::multicast_receiver(settings.endpoint,
                                            static_cast<int>(settings.receive_buffer_bytes))),
      control_socket_(UdpSocket::unicast(settings.endpoint.interface_address, 0, 0)),
      event_(event_new(loop.base(), socket_.fd(), EV_READ | EV_PERSIST, &on_readable, this)),
      batch_(32, settings.max_datagram_bytes),
      control_packet_(1400),
      control_flush_(loop, [this] { flush_control(); }),
      log_(log::get("backbone")) {
    event_add(event_, nullptr);
    log_->info("joined {}:{} on {}", settings.endpoint.group, settings.endpoint.port,
               settings.endpoint.interface_address);
}

BackboneReceiver::~BackboneReceiver() { event_free(event_); }

void BackboneReceiver::on_readable(int, short, void* self) {
    auto* receiver = static_cast<BackboneReceiver*>(self);
    // One batch per wakeup keeps client sockets and timers served under load.
    const size_t n = receiver->batch_.receive(receiver->socket_.fd());
    for (size_t i = 0; i < n; ++i) {
        receiver->handle_datagram(receiver->batch_.datagram(i), receiver->batch_.source(i),
                                  receiver->batch_.truncated(i));
    }
}

void BackboneReceiver::drop_malformed(const sockaddr_in& from, std::string_view why) {
    ++counters_.malformed_packets;
    uint64_t suppressed = 0;
    if (malformed_log_limit_.allow(suppressed)) {
        log_->warn("dropped malformed backbone packet from {}: {} ({} more suppressed)",
                   format_ipv4(from), why, suppressed);
    }
}

void BackboneReceiver::handle_datagram(std::span<const uint8_t> datagram, const sockaddr_in& from,
                                       bool truncated) {
    ++counters_.packets_received;
    counters_.bytes_received += datagram.size();
    if (truncated) {
        ++counters_.truncated_packets;
        return drop_malformed(from, "larger than backbone.max_datagram_bytes");
    }
    proto::PacketHeader header;
    const auto error = proto::decode_packet_header(datagram, header);
    if (error != proto::PacketError::kNone) return drop_malformed(from, proto::packet_error_name(error));
    if (header.epoch == 0) return drop_malformed(from, "epoch 0");
    switch (header.type) {
        case proto::PacketType::kHeartbeat:
            if (!handle_heartbeat(datagram, header, from)) drop_malformed(from, "bad heartbeat");
            return;
        case proto::PacketType::kData: return deliver_messages(datagram, header, from);
        case proto::PacketType::kControl: return drop_malformed(from, "control packet on the data group");
    }
}

void BackboneReceiver::apply_verdict(const SequenceTracker::Result& result, uint64_t previous_epoch) {
    if (result.verdict == SequenceTracker::Verdict::kNewEpoch) {
        control_address_.reset();  // learnt again from the new source's heartbeat
        control_packet_.reset();
        log_->log(previous_epoch == 0 ? spdlog::level::info : spdlog::level::warn,
                  "source epoch {:016x} (previous {:016x})", tracker_.epoch(), previous_epoch);
        handler_.on_source_reset(previous_epoch, tracker_.epoch());
    } else if (result.verdict == SequenceTracker::Verdict::kGap) {
        log_->warn("backbone gap: packets [{}, {}) lost", result.gap_from, result.gap_to);
        handler_.on_backbone_gap(result.gap_from, result.gap_to);
    }
}

bool BackboneReceiver::handle_heartbeat(std::span<const uint8_t> datagram,
                                        const proto::PacketHeader& header, const sockaddr_in& from) {
    PacketMessageIterator messages(datagram, header, proto::FrameTypeSet{proto::FrameType::kHeartbeat});
    proto::Frame frame;
    wire::v1::Heartbeat heartbeat;
    if (messages.next(frame) != PacketMessageIterator::Result::kFrame ||
        !heartbeat.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size())) ||
        heartbeat.control_port() == 0 || heartbeat.control_port() > 65535) {
        return false;
    }
    ++counters_.heartbeats_received;
    const uint64_t previous_epoch = tracker_.epoch();
    apply_verdict(tracker_.on_heartbeat(header.epoch, heartbeat.next_sequence()), previous_epoch);
    if (!control_address_) {
        sockaddr_in address = from;
        address.sin_port = htons(static_cast<uint16_t>(heartbeat.control_port()));
        control_address_ = address;
        log_->info("distributor control address {}", format_ipv4(address));
        handler_.on_control_ready();
    }
    return true;
}

void BackboneReceiver::deliver_messages(std::span<const uint8_t> datagram,
                                        const proto::PacketHeader& header, const sockaddr_in& from) {
    // Validate the whole packet before acting on any of it.
    PacketMessageIterator check(datagram, header, proto::kBackboneDataTypes);
    proto::Frame frame;
    PacketMessageIterator::Result result;
    while ((result = check.next(frame)) == PacketMessageIterator::Result::kFrame) {
    }
    if (result == PacketMessageIterator::Result::kError) return drop_malformed(from, "bad message framing");

    const uint64_t previous_epoch = tracker_.epoch();
    const auto verdict = tracker_.on_data(header.epoch, header.sequence);
    if (verdict.verdict == SequenceTracker::Verdict::kDuplicate) return;
    apply_verdict(verdict, previous_epoch);
    PacketMessageIterator messages(datagram, header, proto::kBackboneDataTypes);
    while (messages.next(frame) == PacketMessageIterator::Result::kFrame) {
        ++counters_.messages_received;
        handler_.on_backbone_message(frame);
    }
}

bool BackboneReceiver::queue_control(proto::FrameType type,
                                     const google::protobuf::MessageLite& message) {
    if (!control_address_) return false;
    const size_t size = proto::frame_bytes(message);
    if (size > control_packet_.max_bytes() - proto::kPacketHeaderBytes) return false;
    if (!control_packet_.fits(size)) flush_control();
    control_packet_.add(type, message);
    control_flush_.fire();
    return true;
}

bool BackboneReceiver::request_image(const wire::v1::ImageRequest& request) {
    if (!queue_control(proto::FrameType::kImageRequest, request)) return false;
    ++counters_.image_requests_sent;
    return true;
}

bool BackboneReceiver::query_directory() {
    return queue_control(proto::FrameType::kDirectoryQuery, wire::v1::DirectoryQuery());
}

void BackboneReceiver::flush_control() {
    if (control_packet_.empty() || !control_address_) return;
    const auto datagram = control_packet_.finish(proto::PacketType::kControl, tracker_.epoch(), 0);
    if (control_socket_.send_to(datagram, *control_address_)) {
        ++counters_.control_packets_sent;
    } else {
        ++counters_.control_send_failures;
    }
    control_packet_.reset();
}

}  // namespace mdcast::server
