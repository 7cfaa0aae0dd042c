#include "distributor/backbone_sender.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/clock.h"
#include "proto/message_parts.h"

namespace mdcast::distributor {

namespace {
// NAK source addresses with a repair bucket; a new one beyond it forgets them
// all (they start again with a full second's worth).
constexpr size_t kMaxNakSources = 4096;
}  // namespace

BackboneSender::BackboneSender(EventLoop& loop, const Settings& settings, uint64_t epoch,
                               std::function<void(bool)> on_congestion)
    : settings_(settings),
      epoch_(epoch),

      flusher_(loop, std::chrono::microseconds(settings.flush_interval_us)),
      heartbeat_timer_(loop, [this] { on_heartbeat_timer(); }),
      backlog_timer_(loop, [this] { drain_backlog(); }),
      packet_(settings.max_datagram_bytes, settings.signer ? kSignatureBytes : 0,
              settings.segmentation_offload),
      window_(settings.retransmit_window_bytes, int64_t{settings.retransmit_window_ms} * 1'000'000,
              int64_t{settings.repair_horizon_ms} * 1'000'000),
      data_rate_(
          settings.data_rate_bytes_per_s,
          std::max<uint64_t>(settings.data_rate_bytes_per_s / 100, settings.max_datagram_bytes)),
      retransmit_rate_(settings.retransmit_rate_bytes_per_s,
                       std::max<uint64_t>(settings.retransmit_rate_bytes_per_s / 100,
                                          settings.max_datagram_bytes)),
      send_loss_(settings.send_loss),
      on_congestion_(std::move(on_congestion)),
      heartbeat_interval_ns_(int64_t{settings.heartbeat_min_us} * 1000),
      log_(log::get("backbone")) {
    for (const auto& endpoint : settings.endpoints) {
        sockets_.push_back(
            UdpSocket::multicast_sender(endpoint, static_cast<int>(settings.send_buffer_bytes)));
        batch_senders_.emplace_back(sockets_.back().fd(), settings.segmentation_offload);
    }
    refusal_logged_.assign(sockets_.size(), false);
    if (send_loss_.active()) {
        log_->warn("TESTING: dropping backbone packets on send ({})",
                   settings.send_loss.describe());
    }
    // Heartbeats from start-up, not from the first data: servers see this distributor
    // (healthy, control port known) before any publisher has sent anything.
    send_heartbeat(monotonic_ns());
    heartbeat_timer_.start_once(std::chrono::microseconds(settings.heartbeat_min_us));
}

bool BackboneSender::send_frame(std::span<const uint8_t> frame) {
    if (frame.size() > max_frame_bytes()) return send_in_parts(frame);
    if (!packet_.fits(frame.size())) send_packet();
    packet_.add_frame(frame);
    flusher_.schedule(*this);
    return true;
}

bool BackboneSender::send(proto::FrameType type, const google::protobuf::MessageLite& message) {
    const size_t size = proto::frame_bytes(message);
    if (size > max_frame_bytes()) {
        if (size > settings_.max_message_bytes) return refuse_oversize(size);
        const std::string frame = proto::encode_frame_string(type, message);
        return send_in_parts({reinterpret_cast<const uint8_t*>(frame.data()), frame.size()});
    }
    if (!packet_.fits(size)) send_packet();
    packet_.add(type, message);
    flusher_.schedule(*this);
    return true;
}

// A message larger than one datagram goes in parts, one after the other in the
// packets that follow (proto/message_parts.h): servers put it together again.
bool BackboneSender::send_in_parts(std::span<const uint8_t> frame) {
    if (frame.size() > settings_.max_message_bytes) return refuse_oversize(frame.size());
    const auto parts = proto::split_message(frame, max_frame_bytes());
    for (const std::string& part : parts) {
        if (!packet_.fits(part.size())) send_packet();
        packet_.add_frame({reinterpret_cast<const uint8_t*>(part.data()), part.size()});
    }
    ++counters_.messages_in_parts;
    counters_.message_parts_sent += parts.size();
    flusher_.schedule(*this);
    return true;
}

// The window evicted datagrams servers may still ask for: at this rate its
// bytes hold less than the repair horizon. Logged when the count passes 1, 2,
// 4, 8 ...: loud at once, never a flood (metric retransmit_window_short_total).
void BackboneSender::note_short_window(int64_t now) {
    const uint64_t evicted = window_.short_evictions();
    const bool crossed = std::bit_floor(evicted) > short_evictions_logged_;
    short_evictions_logged_ = evicted;
    if (!crossed) return;
    log_->warn(
        "backbone.retransmit_window_bytes ({}) holds only {:.2f} s at this rate, less than "
        "backbone.repair_horizon_ms ({}): datagrams servers may still ask for were evicted "
        "[{} so far]; their loss becomes unrecoverable (items re-imaged)",
        settings_.retransmit_window_bytes, static_cast<double>(window_.held_ns(now)) / 1e9,
        settings_.repair_horizon_ms, evicted);
}

// Logged at the 1st, 2nd, 4th, 8th ... refusal: loud, but never a flood.
bool BackboneSender::refuse_oversize(size_t bytes) {
    const uint64_t refused = ++counters_.oversize_messages;
    if ((refused & (refused - 1)) != 0) return false;
    log_->warn(
        "refused a backbone message of {} bytes: over backbone.max_message_bytes ({}) "
        "[{} refused so far]",
        bytes, settings_.max_message_bytes, counters_.oversize_messages);
    return false;
}

void BackboneSender::flush() {
    if (!packet_.empty()) send_packet();
    transmit_unsent();
    if (data_since_flush_) postpone_heartbeat();  // after the sends: not on their path
}

// Numbers the pending datagram, keeps it for repair, and sends it (or queues it
// behind the data rate limit).
void BackboneSender::send_packet() {
    const auto datagram =
        finish_packet(packet_, proto::PacketType::kData, epoch_, next_sequence_, settings_.signer);
    const int64_t now = monotonic_ns();
    window_.store(next_sequence_, datagram, now);
    if (window_.short_evictions() != short_evictions_logged_) note_short_window(now);
    ++next_sequence_;
    counters_.messages_sent += packet_.message_count();
    if (backlog_.empty() && data_rate_.try_take(datagram.size(), now)) {
        unsent_.push_back(next_sequence_ - 1);  // sent by flush(), with the pass's others
    } else {
        ++counters_.data_rate_limited;
        backlog_.emplace_back(datagram.begin(), datagram.end());
        backlog_bytes_ += datagram.size();
        if (!backlog_timer_.pending()) backlog_timer_.start_once(std::chrono::microseconds(100));
        if (!congested_ && backlog_bytes_ >= settings_.max_backlog_bytes) {
            congested_ = true;
            log_->warn("backbone.data_rate_bytes_per_s backlog full ({} bytes): pausing publishers",
                       backlog_bytes_);
            if (on_congestion_) on_congestion_(true);
        }
    }
    packet_.reset();
    note_data_sent(now);
}

// The datagrams numbered since the last flush, from the retransmit window, in
// one sendmmsg per group (a datagram the window already evicted is a gap the
// receivers see beyond its trailing edge).
void BackboneSender::transmit_unsent() {
    if (unsent_.empty()) return;
    unsent_datagrams_.clear();
    for (uint64_t sequence : unsent_) {
        const RetransmitWindow::Entry* entry = window_.find(sequence);
        if (!entry) continue;
        if (send_loss_.drop()) {
            ++counters_.injected_drops;
            continue;
        }
        unsent_datagrams_.emplace_back(entry->datagram);
    }
    unsent_.clear();
    const size_t count = unsent_datagrams_.size();
    unsent_sent_.assign(count, 0);
    for (auto& sender : batch_senders_) sender.send(unsent_datagrams_, unsent_sent_);
    for (size_t i = 0; i < count; ++i)
        note_transmit(unsent_sent_[i] != 0, unsent_datagrams_[i].size());
    note_offload_refusals();
}

// Said once per group: from then on its datagrams go one by one, unpadded.
void BackboneSender::note_offload_refusals() {
    for (size_t i = 0; i < batch_senders_.size(); ++i) {
        const int refusal = batch_senders_[i].offload_refusal();
        if (refusal == 0 || refusal_logged_[i]) continue;
        refusal_logged_[i] = true;
        log_->warn(
            "backbone group {}: the kernel refused UDP segmentation offload ({}); sending "
            "each datagram on its own from now on",
            i + 1, std::strerror(refusal));
    }
}

uint64_t BackboneSender::segmented_datagrams() const {
    uint64_t total = 0;
    for (const auto& sender : batch_senders_) total += sender.segmented_datagrams();
    return total;
}

uint64_t BackboneSender::padding_bytes() const {
    uint64_t total = 0;
    for (const auto& sender : batch_senders_) total += sender.padding_bytes();
    return total;
}

// The sequence is consumed even when the datagram does not leave (kernel
// refusal, injected loss): receivers see a gap and repair it.
void BackboneSender::transmit(std::span<const uint8_t> datagram) {
    if (send_loss_.drop()) {
        ++counters_.injected_drops;
        return;
    }
    note_transmit(send_everywhere(datagram), datagram.size());
}

void BackboneSender::note_transmit(bool sent, size_t bytes) {
    if (sent) {
        ++counters_.packets_sent;
        counters_.bytes_sent += bytes;
        return;
    }
    ++counters_.send_failures;
    uint64_t suppressed = 0;
    if (failure_log_limit_.allow(suppressed)) {
        log_->warn("multicast send failed: {} ({} similar failures suppressed)",
                   std::strerror(errno), suppressed);
    }
}

// Sends on every group; true when at least one took it (the others' loss is repaired).
bool BackboneSender::send_everywhere(std::span<const uint8_t> datagram) {
    bool sent = false;
    for (auto& socket : sockets_) sent = socket.send(datagram) || sent;
    return sent;
}

void BackboneSender::drain_backlog() {
    const int64_t now = monotonic_ns();
    while (!backlog_.empty() && data_rate_.try_take(backlog_.front().size(), now)) {
        transmit(backlog_.front());
        backlog_bytes_ -= backlog_.front().size();
        backlog_.pop_front();
    }
    if (!backlog_.empty()) {
        backlog_timer_.start_once(std::chrono::microseconds(100));
    } else if (congested_) {
        congested_ = false;
        log_->info("backbone backlog drained: resuming publishers");
        if (on_congestion_) on_congestion_(false);
    }
}

TokenBucket& BackboneSender::nak_source(uint32_t address) {
    auto it = nak_sources_.find(address);
    if (it != nak_sources_.end()) return it->second;
    if (nak_sources_.size() >= kMaxNakSources) nak_sources_.clear();
    const uint32_t rate = settings_.repairs_per_source_per_s;
    return nak_sources_.emplace(address, TokenBucket(rate, rate)).first->second;
}

void BackboneSender::on_nak(const wire::v1::Nak& nak, uint32_t source_address, int64_t now) {
    ++counters_.naks_received;
    window_.expire(now);
    TokenBucket& source = nak_source(source_address);
    bool advertise_edge = false;
    uint64_t budget = settings_.max_repairs_per_nak;
    for (const auto& range : nak.ranges()) {
        if (range.to() <= range.from() || range.to() > next_sequence_) {
            ++counters_.naks_invalid;
            continue;
        }
        const uint64_t asked = range.to() - range.from();
        const uint64_t looked_at = std::min(asked, budget);
        counters_.nak_sequences_over_cap += asked - looked_at;
        budget -= looked_at;
        for (uint64_t sequence = range.from(); sequence < range.from() + looked_at; ++sequence) {
            ++counters_.nak_sequences;
            repair(sequence, now, source, advertise_edge);
        }
    }
    // Tell everyone at once what is gone, rather than let each server ask again.
    if (advertise_edge) send_heartbeat(now);
}

void BackboneSender::repair(uint64_t sequence, int64_t now, TokenBucket& source,
                            bool& advertise_edge) {
    RetransmitWindow::Entry* entry = nullptr;
    switch (
        window_.repair_verdict(sequence, now, int64_t{settings_.repair_linger_us} * 1000, entry)) {
        case RetransmitWindow::RepairVerdict::kBeyondWindow:
            ++counters_.naks_beyond_window;
            advertise_edge = true;
            return;
        case RetransmitWindow::RepairVerdict::kLingering:
            ++counters_.naks_lingering;  // the repair just sent heals this server too
            return;
        case RetransmitWindow::RepairVerdict::kSend:
            break;
    }
    if (!source.try_take(1, now)) {
        ++counters_.repairs_source_limited;  // this peer asked for its second's worth already
        return;
    }
    if (!retransmit_rate_.try_take(entry->datagram.size(), now)) {
        ++counters_.retransmit_rate_limited;  // the server asks again after its retry interval
        return;
    }
    RetransmitWindow::mark_repaired(*entry, now);
    // The flag is covered by the signature: re-sign the repair, then restore.
    proto::set_packet_retransmit_flag(entry->datagram, true);
    if (settings_.signer) settings_.signer->sign_datagram(entry->datagram);
    if (send_everywhere(entry->datagram)) {
        ++counters_.repairs_sent;
        counters_.repair_bytes += entry->datagram.size();
    } else {
        ++counters_.send_failures;
    }
    proto::set_packet_retransmit_flag(entry->datagram, false);
    if (settings_.signer) settings_.signer->sign_datagram(entry->datagram);
}

void BackboneSender::note_data_sent(int64_t now) {
    last_data_ns_ = now;
    heartbeat_interval_ns_ = int64_t{settings_.heartbeat_min_us} * 1000;
    if (!heartbeat_timer_.pending()) {
        heartbeat_timer_.start_once(std::chrono::microseconds(settings_.heartbeat_min_us));
    } else {
        data_since_flush_ = true;
    }
}

// See heartbeat_postponed_to (backbone_sender.h).
void BackboneSender::postpone_heartbeat() {
    data_since_flush_ = false;
    if (!heartbeat_timer_.pending()) return;
    const int64_t now = monotonic_ns();
    const int64_t min_ns = int64_t{settings_.heartbeat_min_us} * 1000;
    const int64_t max_ns = int64_t{settings_.heartbeat_max_ms} * 1'000'000;
    if (const auto due = heartbeat_postponed_to(last_data_ns_, heartbeat_timer_.deadline_ns(),
                                                last_heartbeat_ns_, min_ns, max_ns)) {
        heartbeat_timer_.postpone(std::chrono::microseconds((*due - now + 999) / 1000));
    }
}

std::optional<int64_t> heartbeat_postponed_to(int64_t last_data, int64_t due,
                                              int64_t last_heartbeat, int64_t min_ns,
                                              int64_t max_ns) {
    if (due - last_data >= min_ns / 4) return std::nullopt;  // not close yet: no system call
    const int64_t later = std::min(last_data + min_ns, last_heartbeat + max_ns);
    if (later <= due) return std::nullopt;  // heartbeat_max_ms is what is due
    return later;
}

void BackboneSender::on_heartbeat_timer() {
    const int64_t now = monotonic_ns();
    const int64_t max_ns = int64_t{settings_.heartbeat_max_ms} * 1'000'000;
    const int64_t idle_ns = now - last_data_ns_;
    if (idle_ns < heartbeat_interval_ns_ && now - last_heartbeat_ns_ < max_ns) {
        // Data went out recently: the next heartbeat is due one interval after it.
        return heartbeat_timer_.start_once(
            std::chrono::microseconds((heartbeat_interval_ns_ - idle_ns) / 1000 + 1));
    }
    send_heartbeat(now);
    heartbeat_interval_ns_ = std::min(heartbeat_interval_ns_ * 2, max_ns);
    heartbeat_timer_.start_once(std::chrono::microseconds(heartbeat_interval_ns_ / 1000));
}

void BackboneSender::send_heartbeat(int64_t now) {
    flush();  // never advertise a sequence that is still sitting in the buffer
    window_.expire(now);
    wire::v1::Heartbeat heartbeat;
    heartbeat.set_next_sequence(next_sequence_);
    heartbeat.set_trailing_edge(window_.trailing_edge(next_sequence_));
    heartbeat.set_control_port(settings_.control_port);
    heartbeat.set_send_time_ns(static_cast<uint64_t>(realtime_ns()));
    proto::PacketBuilder packet(256, settings_.signer ? kSignatureBytes : 0);
    packet.add(proto::FrameType::kHeartbeat, heartbeat);
    const auto datagram = finish_packet(packet, proto::PacketType::kHeartbeat, epoch_,
                                        next_sequence_, settings_.signer);
    last_heartbeat_ns_ = now;
    if (send_everywhere(datagram)) {
        ++counters_.heartbeats_sent;
    } else {
        ++counters_.send_failures;
    }
}

}  // namespace mdcast::distributor
