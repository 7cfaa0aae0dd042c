#include "server/backbone_receiver.h"

#include <arpa/inet.h>

#include "common/clock.h"

namespace mdcast::server {

using proto::PacketMessageIterator;

BackboneReceiver::BackboneReceiver(EventLoop& loop, const Settings& settings, Handler& handler)
    : settings_(settings),
      handler_(handler),
      socket_(UdpSocket::multicast_receiver(settings.endpoint,
                                            static_cast<int>(settings.receive_buffer_bytes))),
      control_socket_(UdpSocket::unicast(settings.endpoint.interface_address, 0, 0)),
      event_(event_new(loop.base(), socket_.fd(), EV_READ | EV_PERSIST, &on_readable, this)),
      control_event_(event_new(loop.base(), control_socket_.fd(), EV_READ | EV_PERSIST,
                               &on_control_readable, this)),
      batch_(32, settings.max_datagram_bytes),
      control_batch_(4, 512),
      recovery_(settings.recovery, *this),
      control_packet_(1400),
      control_flush_(loop, [this] { flush_control(); }),
      nak_timer_(loop, [this] { on_nak_timer(); }),
      rtt_timer_(loop, [this] { send_rtt_probe(); }),
      silence_timer_(loop, [this] { check_silence(); }),
      receive_loss_(settings.receive_loss),
      control_send_loss_(settings.control_send_loss),
      log_(log::get("backbone")) {
    event_add(event_, nullptr);
    event_add(control_event_, nullptr);
    rtt_timer_.start_periodic(std::chrono::milliseconds(settings.rtt_probe_interval_ms));
    silence_timer_.start_periodic(std::chrono::milliseconds(std::max<uint32_t>(settings.source_silent_ms / 4, 1)));
    log_->info("joined {}:{} on {}", settings.endpoint.group, settings.endpoint.port,
               settings.endpoint.interface_address);
    if (receive_loss_.active()) {
        log_->warn("TESTING: dropping backbone packets on receive ({})", settings.receive_loss.describe());
    }
    if (control_send_loss_.active()) {
        log_->warn("TESTING: dropping control packets on send ({})", settings.control_send_loss.describe());
    }
}

BackboneReceiver::~BackboneReceiver() {
    event_free(event_);
    event_free(control_event_);
}

void BackboneReceiver::on_readable(int, short, void* self) {
    auto* receiver = static_cast<BackboneReceiver*>(self);
    // One batch per wakeup keeps client sockets and timers served under load.
    const size_t n = receiver->batch_.receive(receiver->socket_.fd());
    const int64_t now = monotonic_ns();
    const auto handle = [&](size_t i) {
        receiver->handle_datagram(receiver->batch_.datagram(i), receiver->batch_.source(i),
                                  receiver->batch_.truncated(i), now);
    };
    LossInjector& testing = receiver->receive_loss_;
    for (size_t i = 0; i < n; ++i) {
        if (testing.active() && i + 1 < n && testing.reorder()) {
            handle(i + 1);  // testing: the next datagram overtakes this one
            handle(i++);
            continue;
        }
        handle(i);
        if (testing.active() && testing.duplicate()) handle(i);
    }
    receiver->schedule_naks();
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
                                       bool truncated, int64_t now) {
    ++counters_.packets_received;
    counters_.bytes_received += datagram.size();
    if (receive_loss_.drop()) {
        ++counters_.injected_drops;
        return;
    }
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
            if (!handle_heartbeat(datagram, header, from, now)) drop_malformed(from, "bad heartbeat");
            return;
        case proto::PacketType::kData:
            // Validate the whole packet before it is held or delivered.
            if (!valid_data(datagram, header)) return drop_malformed(from, "bad message framing");
            if (header.flags & proto::kPacketFlagRetransmit) ++counters_.repairs_received;
            heard_from_source(now);
            return recovery_.on_data(header.epoch, header.sequence, datagram, now);
        default: return drop_malformed(from, "control packet on the data group");
    }
}

bool BackboneReceiver::valid_data(std::span<const uint8_t> datagram, const proto::PacketHeader& header) {
    PacketMessageIterator check(datagram, header, proto::kBackboneDataTypes);
    proto::Frame frame;
    PacketMessageIterator::Result result;
    while ((result = check.next(frame)) == PacketMessageIterator::Result::kFrame) {
    }
    return result == PacketMessageIterator::Result::kEnd;
}

bool BackboneReceiver::handle_heartbeat(std::span<const uint8_t> datagram,
                                        const proto::PacketHeader& header, const sockaddr_in& from,
                                        int64_t now) {
    PacketMessageIterator messages(datagram, header, proto::FrameTypeSet{proto::FrameType::kHeartbeat});
    proto::Frame frame;
    wire::v1::Heartbeat heartbeat;
    if (messages.next(frame) != PacketMessageIterator::Result::kFrame ||
        !heartbeat.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size())) ||
        heartbeat.control_port() == 0 || heartbeat.control_port() > 65535 ||
        heartbeat.trailing_edge() > heartbeat.next_sequence()) {
        return false;
    }
    ++counters_.heartbeats_received;
    heard_from_source(now);
    recovery_.on_heartbeat(header.epoch, heartbeat.next_sequence(), heartbeat.trailing_edge(), now);
    if (!control_address_) {
        sockaddr_in address = from;
        address.sin_port = htons(static_cast<uint16_t>(heartbeat.control_port()));
        control_address_ = address;
        log_->info("distributor control address {}", format_ipv4(address));
        send_rtt_probe();
        handler_.on_control_ready();
    }
    return true;
}

// ---- LossRecovery events -------------------------------------------------------------------

void BackboneReceiver::on_deliver(uint64_t, std::span<const uint8_t> datagram) {
    proto::PacketHeader header;
    proto::decode_packet_header(datagram, header);  // validated on arrival
    PacketMessageIterator messages(datagram, header, proto::kBackboneDataTypes);
    proto::Frame frame;
    while (messages.next(frame) == PacketMessageIterator::Result::kFrame) {
        ++counters_.messages_received;
        handler_.on_backbone_message(frame);
    }
}

void BackboneReceiver::on_unrecoverable(uint64_t from, uint64_t to) {
    uint64_t suppressed = 0;
    if (loss_log_limit_.allow(suppressed)) {
        log_->warn("unrecoverable backbone loss: packets [{}, {}) ({} similar suppressed)", from, to,
                   suppressed);
    }
    handler_.on_backbone_unrecoverable(from, to);
}

void BackboneReceiver::on_repaired(uint64_t, int64_t recovery_ns) { repair_times_.record(recovery_ns); }

void BackboneReceiver::on_source_reset(uint64_t previous_epoch, uint64_t epoch) {
    control_address_.reset();  // learnt again from the new source's heartbeat
    control_packet_.reset();
    log_->log(previous_epoch == 0 ? spdlog::level::info : spdlog::level::warn,
              "source epoch {:016x} (previous {:016x})", epoch, previous_epoch);
    handler_.on_source_reset(previous_epoch, epoch);
}

// ---- NAKs ----------------------------------------------------------------------------------

void BackboneReceiver::schedule_naks() {
    const int64_t deadline = recovery_.next_deadline();
    if (deadline == INT64_MAX || (nak_timer_.pending() && deadline >= nak_timer_deadline_)) return;
    nak_timer_deadline_ = deadline;
    const int64_t delay_us = std::max<int64_t>(0, (deadline - monotonic_ns() + 999) / 1000);
    nak_timer_.start_once(std::chrono::microseconds(delay_us));
}

void BackboneReceiver::on_nak_timer() {
    nak_timer_deadline_ = INT64_MAX;
    LossRecovery::Ranges ranges;
    recovery_.on_timer(monotonic_ns(), ranges);
    if (!ranges.empty() && control_address_) {
        wire::v1::Nak nak;
        for (const auto& [from, to] : ranges) {
            auto* range = nak.add_ranges();
            range->set_from(from);
            range->set_to(to);
            if (nak.ranges_size() == 64) {  // keep one NAK within one control datagram
                queue_control(proto::FrameType::kNak, nak);
                nak.Clear();
            }
        }
        if (nak.ranges_size() > 0) queue_control(proto::FrameType::kNak, nak);
        flush_control();  // NAKs do not wait for the end of the iteration
    }
    schedule_naks();
}

// ---- control channel -----------------------------------------------------------------------

bool BackboneReceiver::queue_control(proto::FrameType type, const google::protobuf::MessageLite& message) {
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
    const auto datagram = control_packet_.finish(proto::PacketType::kControl, recovery_.epoch(), 0);
    if (control_send_loss_.drop()) {
        ++counters_.injected_drops;
    } else if (control_socket_.send_to(datagram, *control_address_)) {
        ++counters_.control_packets_sent;
    } else {
        ++counters_.control_send_failures;
    }
    control_packet_.reset();
}

void BackboneReceiver::send_rtt_probe() {
    wire::v1::RttProbe probe;
    probe.set_sent_time_ns(static_cast<uint64_t>(monotonic_ns()));
    if (queue_control(proto::FrameType::kRttProbe, probe)) flush_control();
}

void BackboneReceiver::on_control_readable(int, short, void* self) {
    auto* receiver = static_cast<BackboneReceiver*>(self);
    const size_t n = receiver->control_batch_.receive(receiver->control_socket_.fd());
    const int64_t now = monotonic_ns();
    for (size_t i = 0; i < n; ++i) {
        const auto datagram = receiver->control_batch_.datagram(i);
        proto::PacketHeader header;
        if (proto::decode_packet_header(datagram, header) != proto::PacketError::kNone ||
            header.type != proto::PacketType::kControlReply) {
            receiver->drop_malformed(receiver->control_batch_.source(i), "bad control reply");
            continue;
        }
        PacketMessageIterator messages(datagram, header, proto::kBackboneControlReplyTypes);
        proto::Frame frame;
        wire::v1::RttProbe echo;
        while (messages.next(frame) == PacketMessageIterator::Result::kFrame) {
            if (echo.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size())) &&
                echo.sent_time_ns() != 0 && static_cast<int64_t>(echo.sent_time_ns()) <= now) {
                const int64_t rtt = now - static_cast<int64_t>(echo.sent_time_ns());
                receiver->round_trips_.record(rtt);
                receiver->note_round_trip(rtt);
            }
        }
    }
}

// Smoothed like TCP's SRTT (1/8 gain); NAK retries wait at least two of them.
void BackboneReceiver::note_round_trip(int64_t rtt_ns) {
    smoothed_rtt_ns_ = smoothed_rtt_ns_ == 0 ? rtt_ns : smoothed_rtt_ns_ + (rtt_ns - smoothed_rtt_ns_) / 8;
    recovery_.set_retry_floor(2 * smoothed_rtt_ns_);
}

// ---- silence -------------------------------------------------------------------------------

void BackboneReceiver::heard_from_source(int64_t now) {
    last_heard_ns_ = now;
    if (!silent_) return;
    silent_ = false;
    log_->info("the distributor is heard again");
    handler_.on_source_silent(false);
}

void BackboneReceiver::check_silence() {
    if (silent_ || last_heard_ns_ == 0) return;
    const int64_t quiet_ms = (monotonic_ns() - last_heard_ns_) / 1'000'000;
    if (quiet_ms < settings_.source_silent_ms) return;
    silent_ = true;
    ++counters_.source_silences;
    log_->warn("nothing from the distributor for {} ms: its items are suspect", quiet_ms);
    handler_.on_source_silent(true);
}

}  // namespace mdcast::server
