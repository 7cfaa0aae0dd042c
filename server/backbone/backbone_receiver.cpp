#include "server/backbone/backbone_receiver.h"

#include <arpa/inet.h>

#include "common/clock.h"
#include "proto/source_ids.h"
#include "server/backbone/backbone_source.h"

namespace mdcast::server {

// ---- the receiver ---------------------------------------------------------------------------

BackboneReceiver::BackboneReceiver(EventLoop& loop, const Settings& settings, Handler& handler)
    : settings_(settings),
      handler_(handler),
      control_socket_(UdpSocket::unicast(settings.groups.at(0).interface_address, 0, 0)),
      control_event_(event_new(loop.base(), control_socket_.fd(), EV_READ | EV_PERSIST,
                               &on_control_readable, this)),
      batch_(32, settings.max_datagram_bytes, /*coalesced=*/true),
      control_batch_(16, 2048),  // a NOT_FOUND answer carries names up to 1,280 bytes
      control_flush_(loop, [this] { flush_control(); }),
      nak_timer_(loop, [this] { on_nak_timer(); }),
      rtt_timer_(loop, [this] { send_rtt_probes(); }),
      silence_timer_(loop, [this] { check_silence(); }),
      receive_loss_(settings.receive_loss),
      control_send_loss_(settings.control_send_loss),
      log_(log::get("backbone")) {
    for (const auto& endpoint : settings.groups) {
        auto group = std::make_unique<Group>();
        group->receiver = this;
        group->socket = UdpSocket::multicast_receiver(
            endpoint, static_cast<int>(settings.receive_buffer_bytes));
        // A distributor's segmentation offload run then arrives as one message
        // (batch_ cuts it), not cut by the kernel into a buffer per datagram.
        if (!group->socket.enable_receive_coalescing()) {
            log_->info("{}:{}: the kernel does not coalesce datagrams (UDP_GRO): one per message",
                       endpoint.group, endpoint.port);
        }
        group->read_event = event_new(loop.base(), group->socket.fd(), EV_READ | EV_PERSIST,
                                      &on_readable, group.get());
        event_add(group->read_event, nullptr);
        log_->info("joined {}:{} on {}", endpoint.group, endpoint.port, endpoint.interface_address);
        groups_.push_back(std::move(group));
    }
    event_add(control_event_, nullptr);
    log_->info("server id {:016x} in control messages", server_id_);
    rtt_timer_.start_periodic(std::chrono::milliseconds(settings.rtt_probe_interval_ms));
    silence_timer_.start_periodic(
        std::chrono::milliseconds(std::max<uint32_t>(settings.source_silent_ms / 4, 1)));
    last_silence_check_ns_ = monotonic_ns();  // a pause before the first check is a stall too
    if (receive_loss_.active()) {
        log_->warn("TESTING: dropping backbone packets on receive ({})",
                   settings.receive_loss.describe());
    }
    if (control_send_loss_.active()) {
        log_->warn("TESTING: dropping control packets on send ({})",
                   settings.control_send_loss.describe());
    }
}

BackboneReceiver::~BackboneReceiver() {
    for (auto& group : groups_) event_free(group->read_event);
    event_free(control_event_);
}

bool BackboneReceiver::control_ready(uint16_t source) const {
    const auto it = sources_.find(source);
    return it != sources_.end() && it->second->control_address.has_value();
}

bool BackboneReceiver::silent(uint16_t source) const {
    const auto it = sources_.find(source);
    return it == sources_.end() || it->second->silent;
}

std::vector<uint16_t> BackboneReceiver::sources() const {
    std::vector<uint16_t> ids;
    for (const auto& [id, source] : sources_) ids.push_back(id);
    return ids;
}

LossRecoveryCounters BackboneReceiver::recovery_counters() const {
    LossRecoveryCounters sum;
    for (const auto& [id, source] : sources_) {
        const auto& c = source->recovery.counters();
        sum.delivered += c.delivered;
        sum.duplicates += c.duplicates;
        sum.out_of_order += c.out_of_order;
        sum.gaps += c.gaps;
        sum.missing_detected += c.missing_detected;
        sum.repaired += c.repaired;
        sum.naks_sent += c.naks_sent;
        sum.nak_sequences += c.nak_sequences;
        sum.unrecoverable += c.unrecoverable;
        sum.unrecoverable_events += c.unrecoverable_events;
        sum.epoch_changes += c.epoch_changes;
        sum.buffer_overflows += c.buffer_overflows;
        sum.jumps_refused += c.jumps_refused;
        sum.jumps_taken += c.jumps_taken;
    }
    return sum;
}

uint64_t BackboneReceiver::kernel_drops() const {
    uint64_t drops = 0;
    for (const auto& group : groups_) drops += group->kernel_drops;
    return drops;
}

void BackboneReceiver::on_readable(int, short, void* group) {
    auto* g = static_cast<Group*>(group);
    g->receiver->read_group(*g);
}

void BackboneReceiver::read_group(Group& group) {
    // One batch per wakeup keeps client sockets and timers served under load.
    const size_t n = batch_.receive(group.socket.fd());
    group.kernel_drops = std::max(group.kernel_drops, batch_.kernel_drops());  // per socket
    counters_.coalesced_packets += batch_.coalesced();
    const int64_t now = monotonic_ns();
    const auto handle = [&](size_t i) {
        handle_datagram(batch_.datagram(i), batch_.source(i), batch_.truncated(i), now);
    };
    for (size_t i = 0; i < n; ++i) {
        if (receive_loss_.active() && i + 1 < n && receive_loss_.reorder()) {
            handle(i + 1);  // testing: the next datagram overtakes this one
            handle(i++);
            continue;
        }
        handle(i);
        if (receive_loss_.active() && receive_loss_.duplicate()) handle(i);
    }
    schedule_naks();
}

// With keys configured only packets signed with one of them count.
bool BackboneReceiver::authentic(std::span<const uint8_t> datagram,
                                 const proto::PacketHeader& header) {
    const PacketSigner* signer = settings_.signer;
    if (!signer) return true;
    if ((header.flags & proto::kPacketFlagSigned) && signer->verify_datagram(datagram)) return true;
    ++counters_.bad_signatures;
    return false;
}

void BackboneReceiver::drop_malformed(const sockaddr_in& from, std::string_view why) {
    ++counters_.malformed_packets;
    uint64_t suppressed = 0;
    if (malformed_log_limit_.allow(suppressed)) {
        log_->warn("dropped backbone packet from {}: {} ({} more suppressed)", format_ipv4(from),
                   why, suppressed);
    }
}

// The Source a packet belongs to, created on first contact within max_sources.
BackboneReceiver::Source* BackboneReceiver::source_for(uint64_t epoch) {
    const uint16_t id = proto::epoch_source(epoch);
    if (const auto it = sources_.find(id); it != sources_.end()) return it->second.get();
    if (sources_.size() >= settings_.max_sources) return nullptr;
    log_->info("distributor {} heard for the first time", id);
    return sources_.emplace(id, std::make_unique<Source>(*this, id, settings_.recovery))
        .first->second.get();
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
    if (error != proto::PacketError::kNone)
        return drop_malformed(from, proto::packet_error_name(error));
    datagram = datagram.first(proto::packet_bytes(header));  // without its padding, if any
    if (proto::epoch_source(header.epoch) == 0)
        return drop_malformed(from, "epoch without a distributor id");
    if (!authentic(datagram, header)) return drop_malformed(from, "unsigned or forged packet");
    if (header.type == proto::PacketType::kHeartbeat) {
        if (!handle_heartbeat(datagram, header, from, now)) drop_malformed(from, "bad heartbeat");
        return;
    }
    if (header.type != proto::PacketType::kData)
        return drop_malformed(from, "control packet on a data group");
    // Validate the whole packet before it is held or delivered.
    PacketMessageIterator check(datagram, header, proto::kBackboneDataTypes);
    proto::Frame frame;
    PacketMessageIterator::Result result;
    while ((result = check.next(frame)) == PacketMessageIterator::Result::kFrame) {
    }
    if (result != PacketMessageIterator::Result::kEnd)
        return drop_malformed(from, "bad message framing");
    Source* source = source_for(header.epoch);
    if (!source) {
        ++counters_.foreign_sources;
        return drop_malformed(from, "more distributors than backbone.max_sources");
    }
    if (source->refuses_epoch(header.epoch)) return;  // counted in stale_epochs
    if (header.flags & proto::kPacketFlagRetransmit) ++counters_.repairs_received;
    source->heard(now);
    source->recovery.on_data(header.epoch, header.sequence, datagram, now);
}

bool BackboneReceiver::handle_heartbeat(std::span<const uint8_t> datagram,
                                        const proto::PacketHeader& header, const sockaddr_in& from,
                                        int64_t now) {
    PacketMessageIterator messages(datagram, header,
                                   proto::FrameTypeSet{proto::FrameType::kHeartbeat});
    proto::Frame frame;
    wire::v1::Heartbeat heartbeat;
    if (messages.next(frame) != PacketMessageIterator::Result::kFrame ||
        !heartbeat.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size())) ||
        heartbeat.control_port() == 0 || heartbeat.control_port() > 65535 ||
        heartbeat.trailing_edge() > heartbeat.next_sequence()) {
        return false;
    }
    Source* source = source_for(header.epoch);
    if (!source) {
        ++counters_.foreign_sources;
        return true;
    }
    if (source->refuses_epoch(header.epoch)) return true;  // counted; not malformed
    ++counters_.heartbeats_received;
    source->heard(now);
    source->recovery.on_heartbeat(header.epoch, heartbeat.next_sequence(),
                                  heartbeat.trailing_edge(), now);
    if (!source->control_address) {
        sockaddr_in address = from;
        address.sin_port = htons(static_cast<uint16_t>(heartbeat.control_port()));
        source->control_address = address;
        log_->info("distributor {} control address {}", source->id, format_ipv4(address));
        wire::v1::RttProbe probe;
        probe.set_sent_time_ns(static_cast<uint64_t>(monotonic_ns()));
        if (source->queue_control(proto::FrameType::kRttProbe, probe)) source->flush_control();
        handler_.on_control_ready(source->id);
    }
    return true;
}

// ---- NAKs and control -----------------------------------------------------------------------

void BackboneReceiver::schedule_naks() {
    int64_t deadline = INT64_MAX;
    for (const auto& [id, source] : sources_)
        deadline = std::min(deadline, source->recovery.next_deadline());
    if (deadline == INT64_MAX || (nak_timer_.pending() && deadline >= nak_timer_deadline_)) return;
    nak_timer_deadline_ = deadline;
    const int64_t delay_us = std::max<int64_t>(0, (deadline - monotonic_ns() + 999) / 1000);
    nak_timer_.start_once(std::chrono::microseconds(delay_us));
}

void BackboneReceiver::on_nak_timer() {
    nak_timer_deadline_ = INT64_MAX;
    const int64_t now = monotonic_ns();
    for (auto& [id, source] : sources_) {
        LossRecovery::Ranges ranges;
        source->recovery.on_timer(now, ranges);
        source->send_naks(ranges);
    }
    schedule_naks();
}

bool BackboneReceiver::request_image(uint16_t source, const wire::v1::ImageRequest& request) {
    const auto it = sources_.find(source);
    wire::v1::ImageRequest stamped = request;
    stamped.set_server_id(server_id_);
    if (it == sources_.end() ||
        !it->second->queue_control(proto::FrameType::kImageRequest, stamped))
        return false;
    ++counters_.image_requests_sent;
    return true;
}

bool BackboneReceiver::query_directory(uint16_t source) {
    const auto it = sources_.find(source);
    return it != sources_.end() &&
           it->second->queue_control(proto::FrameType::kDirectoryQuery, wire::v1::DirectoryQuery());
}

bool BackboneReceiver::send_interest(uint16_t source, wire::v1::Interest& interest) {
    const auto it = sources_.find(source);
    if (it == sources_.end()) return false;
    interest.set_epoch(it->second->recovery.epoch());
    interest.set_server_id(server_id_);
    return it->second->queue_control(proto::FrameType::kInterest, interest);
}

void BackboneReceiver::flush_control() {
    for (auto& [id, source] : sources_) source->flush_control();
}

void BackboneReceiver::send_rtt_probes() {
    wire::v1::RttProbe probe;
    probe.set_sent_time_ns(static_cast<uint64_t>(monotonic_ns()));
    for (auto& [id, source] : sources_) {
        if (source->queue_control(proto::FrameType::kRttProbe, probe)) source->flush_control();
    }
}

void BackboneReceiver::on_control_readable(int, short, void* self) {
    auto* receiver = static_cast<BackboneReceiver*>(self);
    const size_t n = receiver->control_batch_.receive(receiver->control_socket_.fd());
    const int64_t now = monotonic_ns();
    for (size_t i = 0; i < n; ++i) {
        receiver->handle_control_reply(receiver->control_batch_.datagram(i),
                                       receiver->control_batch_.source(i), now);
    }
}

// RTT echoes and NOT_FOUND answers, accepted only from a source's control address.
void BackboneReceiver::handle_control_reply(std::span<const uint8_t> datagram,
                                            const sockaddr_in& from, int64_t now) {
    proto::PacketHeader header;
    if (proto::decode_packet_header(datagram, header) != proto::PacketError::kNone ||
        header.type != proto::PacketType::kControlReply || !authentic(datagram, header)) {
        return drop_malformed(from, "bad control reply");
    }
    Source* source = nullptr;
    for (auto& [id, s] : sources_) {
        if (s->control_address && s->control_address->sin_addr.s_addr == from.sin_addr.s_addr &&
            s->control_address->sin_port == from.sin_port) {
            source = s.get();
        }
    }
    if (!source) return;  // e.g. an echo from before the source's reset
    PacketMessageIterator messages(datagram, header, proto::kBackboneControlReplyTypes);
    proto::Frame frame;
    wire::v1::RttProbe echo;
    while (messages.next(frame) == PacketMessageIterator::Result::kFrame) {
        if (frame.type == proto::FrameType::kItemStatus) {
            handler_.on_control_answer(source->id, frame);
        } else if (echo.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size())) &&
                   echo.sent_time_ns() != 0 && static_cast<int64_t>(echo.sent_time_ns()) <= now) {
            const int64_t rtt = now - static_cast<int64_t>(echo.sent_time_ns());
            round_trips_.record(rtt);
            source->note_round_trip(rtt);
        }
    }
}

void BackboneReceiver::check_silence() {
    const int64_t now = monotonic_ns();
    const int64_t period_ns =
        int64_t{std::max<uint32_t>(settings_.source_silent_ms / 4, 1)} * 1'000'000;
    const bool stalled = now - last_silence_check_ns_ > 2 * period_ns;
    last_silence_check_ns_ = now;
    if (stalled) {
        // This process did not run (SIGSTOP, a long stall): what looks like
        // silence is ours, and the packets are waiting in the socket. The
        // sources get a fresh period to be heard before they are blamed.
        ++counters_.stalls;
        for (auto& [id, source] : sources_) source->last_heard_ns = now;
        return;
    }
    for (auto& [id, source] : sources_) {
        if (source->silent || source->last_heard_ns == 0) continue;
        const int64_t quiet_ms = (now - source->last_heard_ns) / 1'000'000;
        if (quiet_ms < settings_.source_silent_ms) continue;
        source->silent = true;
        ++counters_.source_silences;
        log_->warn("nothing from distributor {} for {} ms: its items are suspect", id, quiet_ms);
        handler_.on_source_silent(id, true);
    }
}

}  // namespace mdcast::server
