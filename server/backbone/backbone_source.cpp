#include "server/backbone/backbone_source.h"

#include "proto/limits.h"
#include "wire/backbone.pb.h"

namespace mdcast::server {

namespace {

LossRecoverySettings seeded(LossRecoverySettings settings, uint16_t source) {
    settings.seed ^= source;  // servers and sources back off differently
    return settings;
}

}  // namespace

BackboneSource::BackboneSource(BackboneSourceContext& context, uint16_t id,
                               const LossRecoverySettings& settings)
    : context_(context),
      id_(id),
      recovery_(seeded(settings, id), *this),
      control_packet_(proto::kDefaultDatagramBytes, context.signer ? kSignatureBytes : 0),
      parts_(context.max_message_bytes) {}

bool BackboneSource::refuses_epoch(uint64_t epoch) {
    if (recovery_.epoch() == 0 || epoch >= recovery_.epoch() || silent_) return false;
    ++context_.counters.stale_epochs;
    return true;
}

void BackboneSource::heard(int64_t now) {
    last_heard_ns_ = now;
    if (!silent_) return;
    silent_ = false;
    context_.log.info("distributor {} is heard again", id_);
    context_.handler.on_source_silent(id_, false);
}

void BackboneSource::go_silent() {
    silent_ = true;
    context_.handler.on_source_silent(id_, true);
}

// The arriving packet's messages are delivered from `frames` when LossRecovery
// delivers it at once (the usual case, nothing copied); when it is held after a
// gap they are kept with it until it is delivered or given up. A duplicate of a
// held packet keeps the first copy's, which is the one held.
void BackboneSource::on_data(const proto::PacketHeader& header, std::span<const uint8_t> datagram,
                             const PacketFrames& frames, int64_t now) {
    const uint64_t sequence = header.sequence;
    const bool same_epoch = header.epoch == recovery_.epoch();
    if (!same_epoch) held_frames_.clear();  // what the old epoch held goes with it
    const bool held_before = same_epoch && recovery_.holds(sequence);
    arriving_ = &frames;
    arriving_sequence_ = sequence;
    recovery_.on_data(header.epoch, sequence, datagram, now);
    if (arriving_ && !held_before && recovery_.holds(sequence)) {
        held_frames_.insert_or_assign(sequence, frames);  // this copy is the one held
    }
    arriving_ = nullptr;
    forget_frames_below(recovery_.next_expected());
}

void BackboneSource::forget_frames_below(uint64_t sequence) {
    held_frames_.erase(held_frames_.begin(), held_frames_.lower_bound(sequence));
}

void BackboneSource::on_deliver(uint64_t sequence, std::span<const uint8_t> datagram) {
    if (arriving_ && sequence == arriving_sequence_) {
        deliver(*arriving_, datagram);
        arriving_ = nullptr;
        return;
    }
    const auto it = held_frames_.find(sequence);
    if (it == held_frames_.end()) return;  // never: a held packet's messages are kept with it
    deliver(it->second, datagram);
    held_frames_.erase(it);
}

void BackboneSource::deliver(const PacketFrames& frames, std::span<const uint8_t> datagram) {
    for (const FrameRef& ref : frames) {
        const auto whole = datagram.subspan(ref.offset, ref.size);
        const auto body = whole.subspan(ref.body_offset - ref.offset);
        ++context_.counters.messages_received;
        const proto::Frame frame{ref.type, body, whole};
        if (frame.type == proto::FrameType::kMessagePart) {
            take_part(frame);
            continue;
        }
        if (parts_.in_progress()) refuse_parts("a message came between the parts of another");
        context_.handler.on_upstream_message(id_, frame);
    }
}

// One part of a message larger than a datagram (proto/message_parts.h). The
// whole message is handled as if it had come in one piece.
void BackboneSource::take_part(const proto::Frame& part) {
    std::string why;
    switch (parts_.add(part.body, why)) {
        case proto::MessageAssembler::Result::kPending:
            return;
        case proto::MessageAssembler::Result::kRefused:
            return refuse_parts(why);
        case proto::MessageAssembler::Result::kComplete:
            break;
    }
    const auto whole = parts_.whole();
    const auto header = whole.size() >= proto::kFrameHeaderBytes
                            ? proto::decode_frame_header(whole.data())
                            : proto::FrameHeader{};
    const bool valid = whole.size() >= proto::kFrameHeaderBytes &&
                       header.body_bytes == whole.size() - proto::kFrameHeaderBytes &&
                       header.type != static_cast<uint16_t>(proto::FrameType::kMessagePart) &&
                       proto::frame_flags_allowed(header.type, header.flags) &&
                       proto::kBackboneDataTypes.contains(header.type);
    if (!valid) return refuse_parts("the message put together is not a backbone data frame");
    ++context_.counters.messages_reassembled;
    context_.handler.on_upstream_message(
        id_, proto::Frame{static_cast<proto::FrameType>(header.type),
                          whole.subspan(proto::kFrameHeaderBytes), whole});
}

// A message in parts that cannot be put together is lost, like a packet that
// could not be repaired: the source's items go suspect and are re-imaged.
void BackboneSource::refuse_parts(const std::string& why) {
    parts_.abandon();
    ++context_.counters.message_parts_refused;
    uint64_t suppressed = 0;
    if (context_.loss_log_limit.allow(suppressed)) {
        context_.log.warn(
            "distributor {}: a backbone message in parts was dropped: {} ({} "
            "similar suppressed)",
            id_, why, suppressed);
    }
    context_.handler.on_source_loss(id_, "a backbone message in parts was lost: " + why);
}

void BackboneSource::on_nak_timer(int64_t now) {
    LossRecovery::Ranges ranges;
    recovery_.on_timer(now, ranges);
    send_naks(ranges);
    forget_frames_below(recovery_.next_expected());
}

bool BackboneSource::queue_control(proto::FrameType type,
                                   const google::protobuf::MessageLite& message) {
    if (!control_address_) return false;
    const size_t size = proto::frame_bytes(message);
    if (size > control_packet_.max_bytes() - proto::kPacketHeaderBytes) return false;
    if (!control_packet_.fits(size)) flush_control();
    control_packet_.add(type, message);
    context_.control_flush.fire();
    return true;
}

void BackboneSource::flush_control() {
    if (control_packet_.empty() || !control_address_) return;
    const auto datagram = finish_packet(control_packet_, proto::PacketType::kControl,
                                        recovery_.epoch(), 0, context_.signer);
    if (context_.control_socket.send_to(datagram, *control_address_)) {
        ++context_.counters.control_packets_sent;
    } else {
        ++context_.counters.control_send_failures;
    }
    control_packet_.reset();
}

void BackboneSource::send_naks(const LossRecovery::Ranges& ranges) {
    if (ranges.empty() || !control_address_) return;
    wire::v1::Nak nak;
    nak.set_server_id(context_.server_id);
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

void BackboneSource::note_round_trip(int64_t rtt_ns) {
    smoothed_rtt_ns_ =
        smoothed_rtt_ns_ == 0 ? rtt_ns : smoothed_rtt_ns_ + (rtt_ns - smoothed_rtt_ns_) / 8;
    recovery_.set_retry_floor(2 * smoothed_rtt_ns_);
}

void BackboneSource::on_unrecoverable(uint64_t from, uint64_t to) {
    parts_.abandon();  // its missing parts are in what was lost
    uint64_t suppressed = 0;
    if (context_.loss_log_limit.allow(suppressed)) {
        context_.log.warn(
            "unrecoverable loss from distributor {}: packets [{}, {}) ({} similar suppressed)", id_,
            from, to, suppressed);
    }
    context_.handler.on_source_loss(
        id_, "backbone packets " + std::to_string(from) + ".." + std::to_string(to - 1) + " lost");
}

void BackboneSource::on_repaired(uint64_t, int64_t recovery_ns) {
    context_.repair_times.record(recovery_ns);
}

void BackboneSource::on_source_reset(uint64_t previous_epoch, uint64_t epoch) {
    control_address_.reset();  // learnt again from the new epoch's heartbeat
    parts_.abandon();
    control_packet_.reset();
    context_.log.log(previous_epoch == 0 ? spdlog::level::info : spdlog::level::warn,
                     "distributor {}: epoch {:016x} (previous {:016x})", id_, epoch,
                     previous_epoch);
    context_.handler.on_source_reset(id_, previous_epoch, epoch);
}

}  // namespace mdcast::server
