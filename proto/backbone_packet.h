// Backbone datagram codec.
//
// A datagram is a fixed 32-byte binary header followed by `message_count`
// framed messages (proto/frame.h), packed back to back:
//
//   offset  0  u32  magic 'MDCB' (0x4D444342)
//   offset  4  u8   version (1)
//   offset  5  u8   packet type (PacketType)
//   offset  6  u16  flags: bit 0 = retransmission (a repair); bit 1 = signed
//                   (a 16-byte HMAC trailer follows the payload); bit 2 = padded
//                   (data packets only: zero bytes may follow the packet up to
//                   the datagram's end, so a sender can hand the kernel a run of
//                   equal-size datagrams in one UDP segmentation offload send);
//                   other bits 0
//   offset  8  u64  epoch: distributor id and start time (ms), so ordered; a new
//                   (larger) epoch is a restart, an older one a replay (dropped)
//   offset 16  u64  sequence: per epoch, +1 per data packet; heartbeats carry the
//                   next sequence to be sent and do not consume one
//   offset 24  u16  message count
//   offset 26  u16  reserved (0)
//   offset 28  u32  payload bytes (everything after the header)
//
// All integers are in network byte order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "proto/frame.h"
#include "proto/limits.h"

namespace mdcast::proto {

constexpr uint32_t kPacketMagic = 0x4D444342;  // "MDCB"
constexpr uint8_t kPacketVersion = 1;
constexpr size_t kPacketHeaderBytes = 32;

constexpr uint16_t kPacketFlagRetransmit = 0x0001;
constexpr uint16_t kPacketFlagSigned = 0x0002;
constexpr uint16_t kPacketFlagPadded = 0x0004;
constexpr uint16_t kPacketKnownFlags =
    kPacketFlagRetransmit | kPacketFlagSigned | kPacketFlagPadded;
constexpr size_t kPacketTrailerBytes = 16;  // the signature, when signed

enum class PacketType : uint8_t {
    kData = 1,          // multicast: refresh / update / status / directory
    kHeartbeat = 2,     // multicast: sender idle; carries Heartbeat
    kControl = 3,       // unicast server -> distributor: image requests, queries, NAKs
    kControlReply = 4,  // unicast distributor -> server: RTT echoes, NOT_FOUND answers
};

struct PacketHeader {
    PacketType type = PacketType::kData;
    uint16_t flags = 0;
    uint64_t epoch = 0;
    uint64_t sequence = 0;
    uint16_t message_count = 0;
    uint32_t payload_bytes = 0;
};

// The packet's own bytes (header, payload, trailer): a padded datagram's prefix.
inline size_t packet_bytes(const PacketHeader& header) {
    return kPacketHeaderBytes + header.payload_bytes +
           ((header.flags & kPacketFlagSigned) ? kPacketTrailerBytes : 0);
}

enum class PacketError {
    kNone,
    kTooShort,
    kBadMagic,
    kBadVersion,
    kBadType,
    kBadFlags,
    kBadLength,
    kBadPadding,
    kBadMessage
};

std::string_view packet_error_name(PacketError error);

void encode_packet_header(const PacketHeader& header, uint8_t* out);
// Sets or clears the retransmit flag of an encoded datagram in place.
void set_packet_retransmit_flag(std::span<uint8_t> datagram, bool retransmit);
// Validates the fixed header against the datagram size; does not look at messages.
// A padded packet may be shorter than its datagram when every byte after it is
// zero; the caller then works on datagram.first(packet_bytes(out)).
PacketError decode_packet_header(std::span<const uint8_t> datagram, PacketHeader& out);

// Walks the framed messages of a decoded packet, checking that each one lies
// inside the payload, has an accepted type and that the count matches.
class PacketMessageIterator {
  public:
    PacketMessageIterator(std::span<const uint8_t> datagram, const PacketHeader& header,
                          FrameTypeSet accepted);
    // kFrame: `out` holds the next message. kEnd: all messages read and the payload
    // fully consumed. kError: malformed; stop processing this datagram.
    enum class Result { kFrame, kEnd, kError };
    Result next(Frame& out);

  private:
    std::span<const uint8_t> payload_;
    size_t offset_ = 0;
    uint16_t remaining_;
    FrameTypeSet accepted_;
};

// Packs framed messages into one datagram buffer. The caller checks fits()
// before add(), sends finish()'s bytes, then reset()s.
class PacketBuilder {
  public:
    // With `trailer_bytes` the packet keeps that much room at the end (a signature).
    // `padded`: every packet finished carries kPacketFlagPadded (its sender may
    // pad the datagram with zeros).
    explicit PacketBuilder(size_t max_datagram_bytes, size_t trailer_bytes = 0,
                           bool padded = false);

    bool empty() const { return count_ == 0; }
    uint16_t message_count() const { return count_; }
    size_t bytes() const { return used_; }
    size_t max_bytes() const { return buffer_.size(); }
    bool fits(size_t frame_bytes) const;

    // Appends an already framed message (header + body), e.g. bytes forwarded from a publisher.
    void add_frame(std::span<const uint8_t> frame);
    // Encodes a message into the packet.
    void add(FrameType type, const google::protobuf::MessageLite& message);

    std::span<const uint8_t> finish(PacketType type, uint64_t epoch, uint64_t sequence);
    // Finishes with the signed flag set; the returned span ends with the trailer's
    // room (trailer_bytes), which the caller fills.
    std::span<uint8_t> finish_with_trailer(PacketType type, uint64_t epoch, uint64_t sequence);
    void reset();

  private:
    std::vector<uint8_t> buffer_;
    size_t trailer_bytes_;
    uint16_t flags_;  // kPacketFlagPadded or 0
    size_t used_ = kPacketHeaderBytes;
    uint16_t count_ = 0;
};

}  // namespace mdcast::proto
