#include "proto/backbone_packet.h"

#include <arpa/inet.h>
#include <endian.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace mdcast::proto {

namespace {

void put_u16(uint8_t* out, uint16_t v) {
    v = htons(v);
    std::memcpy(out, &v, 2);
}
void put_u32(uint8_t* out, uint32_t v) {
    v = htonl(v);
    std::memcpy(out, &v, 4);
}
void put_u64(uint8_t* out, uint64_t v) {
    v = htobe64(v);
    std::memcpy(out, &v, 8);
}
uint16_t get_u16(const uint8_t* in) {
    uint16_t v;
    std::memcpy(&v, in, 2);
    return ntohs(v);
}
uint32_t get_u32(const uint8_t* in) {
    uint32_t v;
    std::memcpy(&v, in, 4);
    return ntohl(v);
}
uint64_t get_u64(const uint8_t* in) {
    uint64_t v;
    std::memcpy(&v, in, 8);
    return be64toh(v);
}

bool valid_type(uint8_t raw) {
    return raw >= static_cast<uint8_t>(PacketType::kData) &&
           raw <= static_cast<uint8_t>(PacketType::kControlReply);
}

}  // namespace

std::string_view packet_error_name(PacketError error) {
    switch (error) {
        case PacketError::kNone:
            return "none";
        case PacketError::kTooShort:
            return "too_short";
        case PacketError::kBadMagic:
            return "bad_magic";
        case PacketError::kBadVersion:
            return "bad_version";
        case PacketError::kBadType:
            return "bad_type";
        case PacketError::kBadFlags:
            return "bad_flags";
        case PacketError::kBadLength:
            return "bad_length";
        case PacketError::kBadPadding:
            return "bad_padding";
        case PacketError::kBadMessage:
            return "bad_message";
    }
    return "unknown";
}

void encode_packet_header(const PacketHeader& header, uint8_t* out) {
    put_u32(out, kPacketMagic);
    out[4] = kPacketVersion;
    out[5] = static_cast<uint8_t>(header.type);
    put_u16(out + 6, header.flags);
    put_u64(out + 8, header.epoch);
    put_u64(out + 16, header.sequence);
    put_u16(out + 24, header.message_count);
    put_u16(out + 26, 0);
    put_u32(out + 28, header.payload_bytes);
}

void set_packet_retransmit_flag(std::span<uint8_t> datagram, bool retransmit) {
    uint16_t flags = get_u16(datagram.data() + 6);
    flags = retransmit ? (flags | kPacketFlagRetransmit) : (flags & ~kPacketFlagRetransmit);
    put_u16(datagram.data() + 6, flags);
}

PacketError decode_packet_header(std::span<const uint8_t> datagram, PacketHeader& out) {
    if (datagram.size() < kPacketHeaderBytes) return PacketError::kTooShort;
    const uint8_t* in = datagram.data();
    if (get_u32(in) != kPacketMagic) return PacketError::kBadMagic;
    if (in[4] != kPacketVersion) return PacketError::kBadVersion;
    if (!valid_type(in[5])) return PacketError::kBadType;
    out.type = static_cast<PacketType>(in[5]);
    out.flags = get_u16(in + 6);
    if ((out.flags & ~kPacketKnownFlags) != 0 || get_u16(in + 26) != 0)
        return PacketError::kBadFlags;
    if ((out.flags & (kPacketFlagRetransmit | kPacketFlagPadded)) && out.type != PacketType::kData)
        return PacketError::kBadFlags;
    out.epoch = get_u64(in + 8);
    out.sequence = get_u64(in + 16);
    out.message_count = get_u16(in + 24);
    out.payload_bytes = get_u32(in + 28);
    const size_t trailer = (out.flags & kPacketFlagSigned) ? kPacketTrailerBytes : 0;
    if (datagram.size() < kPacketHeaderBytes + trailer) return PacketError::kBadLength;
    const size_t room = datagram.size() - kPacketHeaderBytes - trailer;
    if (out.payload_bytes == room) return PacketError::kNone;
    if (!(out.flags & kPacketFlagPadded) || out.payload_bytes > room)
        return PacketError::kBadLength;
    // Padding carries nothing: zero bytes only, so no data hides after the packet.
    const auto padding = datagram.subspan(packet_bytes(out));
    if (std::any_of(padding.begin(), padding.end(), [](uint8_t b) { return b != 0; }))
        return PacketError::kBadPadding;
    return PacketError::kNone;
}

PacketMessageIterator::PacketMessageIterator(std::span<const uint8_t> datagram,
                                             const PacketHeader& header, FrameTypeSet accepted)
    : payload_(datagram.subspan(kPacketHeaderBytes, header.payload_bytes)),
      remaining_(header.message_count),
      accepted_(accepted) {}

PacketMessageIterator::Result PacketMessageIterator::next(Frame& out) {
    const size_t left = payload_.size() - offset_;
    if (remaining_ == 0) return left == 0 ? Result::kEnd : Result::kError;
    if (left < kFrameHeaderBytes) return Result::kError;
    const uint8_t* head = payload_.data() + offset_;
    const FrameHeader header = decode_frame_header(head);
    if (!frame_flags_allowed(header.type, header.flags) || !accepted_.contains(header.type))
        return Result::kError;
    if (header.body_bytes > left - kFrameHeaderBytes) return Result::kError;
    const size_t total = kFrameHeaderBytes + header.body_bytes;
    out.type = static_cast<FrameType>(header.type);
    out.whole = {head, total};
    out.body = {head + kFrameHeaderBytes, header.body_bytes};
    offset_ += total;
    --remaining_;
    return Result::kFrame;
}

PacketBuilder::PacketBuilder(size_t max_datagram_bytes, size_t trailer_bytes, bool padded)
    : trailer_bytes_(trailer_bytes), flags_(padded ? kPacketFlagPadded : 0) {
    if (max_datagram_bytes < kPacketHeaderBytes + kFrameHeaderBytes + trailer_bytes ||
        max_datagram_bytes > kMaxDatagramBytes) {
        throw std::invalid_argument("max datagram size out of range");
    }
    buffer_.resize(max_datagram_bytes);
}

bool PacketBuilder::fits(size_t frame_bytes) const {
    return count_ < UINT16_MAX && used_ + frame_bytes + trailer_bytes_ <= buffer_.size();
}

void PacketBuilder::add_frame(std::span<const uint8_t> frame) {
    std::memcpy(buffer_.data() + used_, frame.data(), frame.size());
    used_ += frame.size();
    ++count_;
}

void PacketBuilder::add(FrameType type, const google::protobuf::MessageLite& message) {
    used_ += encode_frame(type, message, buffer_.data() + used_);
    ++count_;
}

std::span<const uint8_t> PacketBuilder::finish(PacketType type, uint64_t epoch, uint64_t sequence) {
    PacketHeader header;
    header.type = type;
    header.flags = flags_;
    header.epoch = epoch;
    header.sequence = sequence;
    header.message_count = count_;
    header.payload_bytes = static_cast<uint32_t>(used_ - kPacketHeaderBytes);
    encode_packet_header(header, buffer_.data());
    return {buffer_.data(), used_};
}

std::span<uint8_t> PacketBuilder::finish_with_trailer(PacketType type, uint64_t epoch,
                                                      uint64_t sequence) {
    finish(type, epoch, sequence);
    put_u16(buffer_.data() + 6, flags_ | kPacketFlagSigned);
    return {buffer_.data(), used_ + trailer_bytes_};
}

void PacketBuilder::reset() {
    used_ = kPacketHeaderBytes;
    count_ = 0;
}

}  // namespace mdcast::proto
