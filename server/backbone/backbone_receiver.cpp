#include "server/backbone/backbone_receiver.h"

#include <arpa/inet.h>

#include <algorithm>

#include "common/clock.h"
#include "proto/source_ids.h"

namespace mdcast::server {

using proto::PacketMessageIterator;

// ---- the receiver ---------------------------------------------------------------------------

BackboneReceiver::BackboneReceiver(EventLoop& loop, const Settings& settings, Handler& handler)
    : settings_(settings),
      handler_(handler),
      log_(log::get("backbone")),
      control_socket_(UdpSocket::unicast(settings.groups.at(0).interface_address, 0, 0),
                      LossSettings{}, settings.control_send_loss),
      control_event_(event_new(loop.base(), control_socket_.fd(), EV_READ | EV_PERSIST,
                               &on_control_readable, this)),
      batch_(32, settings.max_datagram_bytes, /*coalesced=*/true),
      control_batch_(16, 2048),  // a NOT_FOUND answer carries names up to 1,280 bytes
      control_flush_(loop, [this] { flush_control(); }),
      source_context_{handler,
                      control_socket_,
                      settings_.signer.get(),
                      control_flush_,
                      counters_,
                      repair_times_,
                      loss_log_limit_,
                      *log_,
                      server_id_,
                      settings.max_message_bytes},
      nak_timer_(loop, [this] { on_nak_timer(); }),
      rtt_timer_(loop, [this] { send_rtt_probes(); }),
      silence_timer_(loop, [this] { check_silence(); }) {
    // Each group draws its own loss (redundant paths lose different packets).
    for (const auto& endpoint : settings.groups) join(loop, endpoint, groups_.size());
    event_add(control_event_, nullptr);
    log_->info("server id {:016x} in control messages", server_id_);
    rtt_timer_.start_periodic(std::chrono::milliseconds(settings.rtt_probe_interval_ms));
    arm_silence_check(monotonic_ns());  // a pause before the first check is a stall too
    if (settings.receive_loss.active()) {
        log_->warn("TESTING: dropping backbone packets on receive ({})",
                   settings.receive_loss.describe());
    }
    if (settings.control_send_loss.active()) {
        log_->warn("TESTING: dropping control packets on send ({})",
                   settings.control_send_loss.describe());
    }
}

void BackboneReceiver::join(EventLoop& loop, const MulticastEndpoint& endpoint, uint64_t index) {
    LossSettings loss = settings_.receive_loss;
    loss.seed += index * 7919;
    auto group = std::make_unique<Group>(Group{
        this,
        LossySocket(UdpSocket::multicast_receiver(endpoint,
                                                  static_cast<int>(settings_.receive_buffer_bytes)),
                    loss, LossSettings{}),
    });
    // A distributor's segmentation offload run then arrives as one message
    // (batch_ cuts it), not cut by the kernel into a buffer per datagram.
    if (!group->socket.socket().enable_receive_coalescing()) {
        log_->info("{}:{}: the kernel does not coalesce datagrams (UDP_GRO): one per message",
                   endpoint.group, endpoint.port);
    }
    group->read_event =
        event_new(loop.base(), group->socket.fd(), EV_READ | EV_PERSIST, &on_readable, group.get());
    event_add(group->read_event, nullptr);
    log_->info("joined {}:{} on {}", endpoint.group, endpoint.port, endpoint.interface_address);
    groups_.push_back(std::move(group));
}

BackboneReceiver::~BackboneReceiver() {
    for (auto& group : groups_) event_free(group->read_event);
    event_free(control_event_);
}

BackboneSource* BackboneReceiver::find_source(uint16_t id) const {
    const auto it = sources_.find(id);
    return it == sources_.end() ? nullptr : it->second.get();
}

bool BackboneReceiver::ready(uint16_t source) const {
    const BackboneSource* s = find_source(source);
    return s && s->control_address().has_value();
}

bool BackboneReceiver::silent(uint16_t source) const {
    const BackboneSource* s = find_source(source);
    return !s || s->silent();
}

std::vector<uint16_t> BackboneReceiver::sources() const {
    std::vector<uint16_t> ids;
    for (const auto& [id, source] : sources_) ids.push_back(id);
    return ids;
}

LossRecoveryCounters BackboneReceiver::recovery_counters() const {
    LossRecoveryCounters sum;
    for (const auto& [id, source] : sources_) {
        const auto& c = source->recovery().counters();
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

uint64_t BackboneReceiver::injected_drops() const {
    uint64_t drops = control_socket_.injected_drops();
    for (const auto& group : groups_) drops += group->socket.injected_drops();
    return drops;
}

void BackboneReceiver::on_readable(int, short, void* group) {
    auto* g = static_cast<Group*>(group);
    g->receiver->read_group(*g);
}

void BackboneReceiver::read_group(Group& group) {
    // One batch per wakeup keeps client sockets and timers served under load.
    const int64_t now = monotonic_ns();
    group.socket.receive(batch_, [&](size_t i) {
        handle_datagram(batch_.datagram(i), batch_.source(i), batch_.truncated(i), now);
    });
    group.kernel_drops = std::max(group.kernel_drops, batch_.kernel_drops());  // per socket
    counters_.coalesced_packets += batch_.coalesced();
    schedule_naks();
}

// With keys configured only packets signed with one of them count.
bool BackboneReceiver::authentic(std::span<const uint8_t> datagram,
                                 const proto::PacketHeader& header) {
    const PacketSigner* signer = settings_.signer.get();
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
BackboneSource* BackboneReceiver::source_for(uint64_t epoch) {
    const uint16_t id = proto::epoch_source(epoch);
    if (BackboneSource* source = find_source(id)) return source;
    if (sources_.size() >= settings_.max_sources) return nullptr;
    log_->info("distributor {} heard for the first time", id);
    return sources_
        .emplace(id, std::make_unique<BackboneSource>(source_context_, id, settings_.recovery))
        .first->second.get();
}

// Validates every message of a data packet and notes where each lies in frames_:
// the only walk through the packet (BackboneSource delivers from frames_).
bool BackboneReceiver::find_frames(std::span<const uint8_t> datagram,
                                   const proto::PacketHeader& header) {
    frames_.clear();
    PacketMessageIterator messages(datagram, header, proto::kBackboneDataTypes);
    proto::Frame frame;
    PacketMessageIterator::Result result;
    while ((result = messages.next(frame)) == PacketMessageIterator::Result::kFrame) {
        const auto offset = static_cast<uint32_t>(frame.whole.data() - datagram.data());
        frames_.push_back({frame.type, offset, static_cast<uint32_t>(frame.whole.size()),
                           static_cast<uint32_t>(frame.body.data() - datagram.data())});
    }
    return result == PacketMessageIterator::Result::kEnd;
}

void BackboneReceiver::handle_datagram(std::span<const uint8_t> datagram, const sockaddr_in& from,
                                       bool truncated, int64_t now) {
    ++counters_.packets_received;
    counters_.bytes_received += datagram.size();
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
    // The whole packet is validated before it is held or delivered.
    if (!find_frames(datagram, header)) return drop_malformed(from, "bad message framing");
    BackboneSource* source = source_for(header.epoch);
    if (!source) {
        ++counters_.foreign_sources;
        return drop_malformed(from, "more distributors than backbone.max_sources");
    }
    if (source->refuses_epoch(header.epoch)) return;  // counted in stale_epochs
    if (header.flags & proto::kPacketFlagRetransmit) ++counters_.repairs_received;
    source->heard(now);
    source->on_data(header, datagram, frames_, now);
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
    BackboneSource* source = source_for(header.epoch);
    if (!source) {
        ++counters_.foreign_sources;
        return true;
    }
    if (source->refuses_epoch(header.epoch)) return true;  // counted; not malformed
    ++counters_.heartbeats_received;
    source->heard(now);
    source->on_heartbeat(header.epoch, heartbeat.next_sequence(), heartbeat.trailing_edge(), now);
    if (!source->control_address()) {
        sockaddr_in address = from;
        address.sin_port = htons(static_cast<uint16_t>(heartbeat.control_port()));
        source->set_control_address(address);
        log_->info("distributor {} control address {}", source->id(), format_ipv4(address));
        wire::v1::RttProbe probe;
        probe.set_sent_time_ns(static_cast<uint64_t>(monotonic_ns()));
        if (source->queue_control(proto::FrameType::kRttProbe, probe)) source->flush_control();
        handler_.on_source_ready(source->id());
    }
    return true;
}

// ---- NAKs and control -----------------------------------------------------------------------

void BackboneReceiver::schedule_naks() {
    int64_t deadline = INT64_MAX;
    for (const auto& [id, source] : sources_)
        deadline = std::min(deadline, source->next_deadline());
    if (deadline == INT64_MAX || (nak_timer_.pending() && deadline >= nak_timer_deadline_)) return;
    nak_timer_deadline_ = deadline;
    const int64_t delay_us = std::max<int64_t>(0, (deadline - monotonic_ns() + 999) / 1000);
    nak_timer_.start_once(std::chrono::microseconds(delay_us));
}

void BackboneReceiver::on_nak_timer() {
    nak_timer_deadline_ = INT64_MAX;
    const int64_t now = monotonic_ns();
    for (auto& [id, source] : sources_) source->on_nak_timer(now);
    schedule_naks();
}

bool BackboneReceiver::request_image(uint16_t source, const wire::v1::ImageRequest& request) {
    BackboneSource* s = find_source(source);
    wire::v1::ImageRequest stamped = request;
    stamped.set_server_id(server_id_);
    if (!s || !s->queue_control(proto::FrameType::kImageRequest, stamped)) return false;
    ++counters_.image_requests_sent;
    return true;
}

bool BackboneReceiver::query_directory(uint16_t source) {
    BackboneSource* s = find_source(source);
    return s && s->queue_control(proto::FrameType::kDirectoryQuery, wire::v1::DirectoryQuery());
}

bool BackboneReceiver::send_interest(uint16_t source, wire::v1::Interest& interest) {
    BackboneSource* s = find_source(source);
    if (!s) return false;
    interest.set_epoch(s->recovery().epoch());
    interest.set_server_id(server_id_);
    return s->queue_control(proto::FrameType::kInterest, interest);
}

bool BackboneReceiver::send_post(uint16_t source, wire::v1::Post& post) {
    BackboneSource* s = find_source(source);
    post.set_server_id(server_id_);
    return s && s->queue_control(proto::FrameType::kPost, post);
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
    const int64_t now = monotonic_ns();
    auto& batch = receiver->control_batch_;
    receiver->control_socket_.receive(batch, [&](size_t i) {
        receiver->handle_control_reply(batch.datagram(i), batch.source(i), now);
    });
}

// RTT echoes, NOT_FOUND answers and post answers, accepted only from a source's
// control address.
void BackboneReceiver::handle_control_reply(std::span<const uint8_t> datagram,
                                            const sockaddr_in& from, int64_t now) {
    proto::PacketHeader header;
    if (proto::decode_packet_header(datagram, header) != proto::PacketError::kNone ||
        header.type != proto::PacketType::kControlReply || !authentic(datagram, header)) {
        return drop_malformed(from, "bad control reply");
    }
    BackboneSource* source = nullptr;
    for (auto& [id, s] : sources_) {
        const auto& address = s->control_address();
        if (address && address->sin_addr.s_addr == from.sin_addr.s_addr &&
            address->sin_port == from.sin_port) {
            source = s.get();
        }
    }
    if (!source) return;  // e.g. an echo from before the source's reset
    PacketMessageIterator messages(datagram, header, proto::kBackboneControlReplyTypes);
    proto::Frame frame;
    wire::v1::RttProbe echo;
    wire::v1::PostAck ack;
    while (messages.next(frame) == PacketMessageIterator::Result::kFrame) {
        if (frame.type == proto::FrameType::kItemStatus) {
            handler_.on_source_answer(source->id(), frame);
        } else if (frame.type == proto::FrameType::kPostAck) {
            if (ack.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size())))
                handler_.on_source_post_ack(source->id(), ack);
        } else if (echo.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size())) &&
                   echo.sent_time_ns() != 0 && static_cast<int64_t>(echo.sent_time_ns()) <= now) {
            const int64_t rtt = now - static_cast<int64_t>(echo.sent_time_ns());
            round_trips_.record(rtt);
            source->note_round_trip(rtt);
        }
    }
}

int64_t BackboneReceiver::silence_period_ns() const {
    return int64_t{std::max<uint32_t>(settings_.source_silent_ms / 4, 1)} * 1'000'000;
}

// The next check: when the source heard longest ago reaches backbone.source_silent_ms
// (so a silent distributor is blamed on time, and its items move to a standby on time),
// and at least once a period (a check that comes a period late tells of a stall).
void BackboneReceiver::arm_silence_check(int64_t now) {
    const int64_t silent_ns = int64_t{settings_.source_silent_ms} * 1'000'000;
    int64_t due = now + silence_period_ns();
    for (const auto& [id, source] : sources_) {
        if (source->silent() || source->last_heard_ns() == 0) continue;
        due = std::min(due, source->last_heard_ns() + silent_ns);
    }
    silence_due_ns_ = std::max(due, now + 1'000'000);
    silence_timer_.start_once(std::chrono::microseconds((silence_due_ns_ - now) / 1000));
}

void BackboneReceiver::check_silence() {
    const int64_t now = monotonic_ns();
    if (now - silence_due_ns_ > silence_period_ns()) {
        // This process did not run (SIGSTOP, a long stall): what looks like
        // silence is ours, and the packets are waiting in the socket. The
        // sources get a fresh period to be heard before they are blamed.
        ++counters_.stalls;
        for (auto& [id, source] : sources_) source->reset_heard(now);
        return arm_silence_check(now);
    }
    const int64_t silent_ns = int64_t{settings_.source_silent_ms} * 1'000'000;
    for (auto& [id, source] : sources_) {
        if (source->silent() || source->last_heard_ns() == 0) continue;
        const int64_t quiet_ns = now - source->last_heard_ns();
        if (quiet_ns < silent_ns) continue;
        ++counters_.source_silences;
        log_->warn("nothing from distributor {} for {} ms: its items are suspect", id,
                   quiet_ns / 1'000'000);
        source->go_silent();
    }
    arm_silence_check(now);  // the silent ones no longer count
}

}  // namespace mdcast::server
