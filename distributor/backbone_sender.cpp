#include "distributor/backbone_sender.h"

#include <cerrno>
#include <cstring>

#include "common/clock.h"
#include "wire/backbone.pb.h"

namespace mdcast::distributor {

BackboneSender::BackboneSender(EventLoop& loop, const Settings& settings, uint64_t epoch)
    : settings_(settings),
      epoch_(epoch),
      socket_(UdpSocket::multicast_sender(settings.endpoint,
                                          static_cast<int>(settings.send_buffer_bytes))),
      flusher_(loop, std::chrono::microseconds(settings.flush_interval_us)),
      heartbeat_timer_(loop, [this] { send_heartbeat(); }),
      packet_(settings.max_datagram_bytes),
      log_(log::get("backbone")) {
    heartbeat_timer_.start_periodic(std::chrono::milliseconds(settings.heartbeat_interval_ms));
}

bool BackboneSender::send_frame(std::span<const uint8_t> frame) {
    if (frame.size() > max_frame_bytes()) {
        ++counters_.oversize_messages;
        return false;
    }
    if (!packet_.fits(frame.size())) send_packet();
    packet_.add_frame(frame);
    flusher_.schedule(*this);
    return true;
}

bool BackboneSender::send(proto::FrameType type, const google::protobuf::MessageLite& message) {
    const size_t size = proto::frame_bytes(message);  // also caches the body size
    if (size > max_frame_bytes()) {
        ++counters_.oversize_messages;
        return false;
    }
    if (!packet_.fits(size)) send_packet();
    packet_.add(type, message);
    flusher_.schedule(*this);
    return true;
}

void BackboneSender::flush() {
    if (!packet_.empty()) send_packet();
}

void BackboneSender::send_packet() {
    const auto datagram = packet_.finish(proto::PacketType::kData, epoch_, next_sequence_);
    // The sequence is consumed even when the kernel refuses the datagram, so the
    // loss is visible to receivers as a gap rather than hidden.
    ++next_sequence_;
    if (socket_.send(datagram)) {
        ++counters_.packets_sent;
        counters_.bytes_sent += datagram.size();
        counters_.messages_sent += packet_.message_count();
    } else {
        ++counters_.send_failures;
        uint64_t suppressed = 0;
        if (failure_log_limit_.allow(suppressed)) {
            log_->warn("multicast send failed: {} (packet {}, {} similar failures suppressed)",
                       std::strerror(errno), next_sequence_ - 1, suppressed);
        }
    }
    packet_.reset();
}

void BackboneSender::send_heartbeat() {
    flush();  // never advertise a sequence that is still sitting in the buffer
    wire::v1::Heartbeat heartbeat;
    heartbeat.set_next_sequence(next_sequence_);
    heartbeat.set_control_port(settings_.control_port);
    heartbeat.set_send_time_ns(static_cast<uint64_t>(realtime_ns()));
    proto::PacketBuilder packet(256);
    packet.add(proto::FrameType::kHeartbeat, heartbeat);
    const auto datagram = packet.finish(proto::PacketType::kHeartbeat, epoch_, next_sequence_);
    if (socket_.send(datagram)) {
        ++counters_.heartbeats_sent;
    } else {
        ++counters_.send_failures;
    }
}

}  // namespace mdcast::distributor
