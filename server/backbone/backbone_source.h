#pragma once
// One distributor as a server's backbone receiver follows it: its epoch and
// loss recovery, its control address and the control packets (NAKs, image
// requests, probes) queued for it, its round-trip time. Private to
// backbone_receiver*.cpp: the receiver's own state is reached through it.
#include <arpa/inet.h>

#include <optional>

#include "server/backbone/backbone_receiver.h"

namespace mdcast::server {

using proto::PacketMessageIterator;

inline LossRecoverySettings seeded(LossRecoverySettings settings, uint16_t source) {
    settings.seed ^= source;  // servers and sources back off differently
    return settings;
}

class BackboneReceiver::Source final : public LossRecovery::Handler {
  public:
    Source(BackboneReceiver& receiver, uint16_t source_id, const LossRecoverySettings& settings)
        : id(source_id),
          recovery(seeded(settings, source_id), *this),
          control_packet(1400, receiver.settings_.signer ? kSignatureBytes : 0),
          receiver_(receiver) {}

    const uint16_t id;
    LossRecovery recovery;
    std::optional<sockaddr_in> control_address;
    proto::PacketBuilder control_packet;
    int64_t last_heard_ns = 0;
    bool silent = false;
    int64_t smoothed_rtt_ns = 0;

    // Epochs grow with the distributor's start time: an older one than the
    // epoch followed is a replayed packet from before a restart. Only a silent
    // source (its host's clock stepped back across a restart) may go back.
    bool refuses_epoch(uint64_t epoch) {
        if (recovery.epoch() == 0 || epoch >= recovery.epoch() || silent) return false;
        ++receiver_.counters_.stale_epochs;
        return true;
    }

    void heard(int64_t now) {
        last_heard_ns = now;
        if (!silent) return;
        silent = false;
        receiver_.log_->info("distributor {} is heard again", id);
        receiver_.handler_.on_source_silent(id, false);
    }

    bool queue_control(proto::FrameType type, const google::protobuf::MessageLite& message) {
        if (!control_address) return false;
        const size_t size = proto::frame_bytes(message);
        if (size > control_packet.max_bytes() - proto::kPacketHeaderBytes) return false;
        if (!control_packet.fits(size)) flush_control();
        control_packet.add(type, message);
        receiver_.control_flush_.fire();
        return true;
    }

    void flush_control() {
        if (control_packet.empty() || !control_address) return;
        const auto datagram = finish_packet(control_packet, proto::PacketType::kControl,
                                            recovery.epoch(), 0, receiver_.settings_.signer);
        auto& counters = receiver_.counters_;
        if (receiver_.control_send_loss_.drop()) {
            ++counters.injected_drops;
        } else if (receiver_.control_socket_.send_to(datagram, *control_address)) {
            ++counters.control_packets_sent;
        } else {
            ++counters.control_send_failures;
        }
        control_packet.reset();
    }

    void send_naks(const LossRecovery::Ranges& ranges) {
        if (ranges.empty() || !control_address) return;
        wire::v1::Nak nak;
        nak.set_server_id(receiver_.server_id_);
        for (const auto& [from, to] : ranges) {
            auto* range = nak.add_ranges();
            range->set_from(from);
            range->set_to(to);
            if (nak.ranges_size() == 64) {  // keep one NAK within one control datagram
                queue_control(proto::FrameType::kNak, nak);
                nak.clear_ranges();
            }
        }
        if (nak.ranges_size() > 0) queue_control(proto::FrameType::kNak, nak);
        flush_control();  // NAKs do not wait for the end of the iteration
    }

    // Smoothed like TCP's SRTT (gain 1/8); NAK retries wait at least two of them.
    void note_round_trip(int64_t rtt_ns) {
        smoothed_rtt_ns =
            smoothed_rtt_ns == 0 ? rtt_ns : smoothed_rtt_ns + (rtt_ns - smoothed_rtt_ns) / 8;
        recovery.set_retry_floor(2 * smoothed_rtt_ns);
    }

    void on_deliver(uint64_t, std::span<const uint8_t> datagram) override {
        proto::PacketHeader header;
        proto::decode_packet_header(datagram, header);  // validated on arrival
        PacketMessageIterator messages(datagram, header, proto::kBackboneDataTypes);
        proto::Frame frame;
        while (messages.next(frame) == PacketMessageIterator::Result::kFrame) {
            ++receiver_.counters_.messages_received;
            receiver_.handler_.on_backbone_message(id, frame);
        }
    }

    void on_unrecoverable(uint64_t from, uint64_t to) override {
        uint64_t suppressed = 0;
        if (receiver_.loss_log_limit_.allow(suppressed)) {
            receiver_.log_->warn(
                "unrecoverable loss from distributor {}: packets [{}, {}) ({} similar suppressed)",
                id, from, to, suppressed);
        }
        receiver_.handler_.on_backbone_unrecoverable(id, from, to);
    }

    void on_repaired(uint64_t, int64_t recovery_ns) override {
        receiver_.repair_times_.record(recovery_ns);
    }

    void on_source_reset(uint64_t previous_epoch, uint64_t epoch) override {
        control_address.reset();  // learnt again from the new epoch's heartbeat
        control_packet.reset();
        receiver_.log_->log(previous_epoch == 0 ? spdlog::level::info : spdlog::level::warn,
                            "distributor {}: epoch {:016x} (previous {:016x})", id, epoch,
                            previous_epoch);
        receiver_.handler_.on_source_reset(id, previous_epoch, epoch);
    }

  private:
    BackboneReceiver& receiver_;
};

}  // namespace mdcast::server
