// TCP frame and backbone message framing.
//
// Every message on every conversation is a frame: an 8-byte header followed by a
// protobuf body. The same framing packs messages inside backbone datagrams, so a
// server forwards the exact bytes it received to its clients (encode once).
//
//   offset 0  u32  body length (network byte order)
//   offset 4  u16  frame type  (FrameType, network byte order)
//   offset 6  u16  flags       (0, or kFrameFlagMap on a Refresh or Update
//                               carrying a book's map: docs/books.md)
#pragma once

#include <google/protobuf/message_lite.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace mdcast::proto {

constexpr size_t kFrameHeaderBytes = 8;
constexpr uint32_t kProtocolVersion = 1;
// Set on a Refresh or Update whose body carries a book's `map`: a peer from
// before books refuses the frame (non-zero flags) rather than take a book for
// an empty field list. The only flag defined.
constexpr uint16_t kFrameFlagMap = 1;

enum class FrameType : uint16_t {
    kLoginRequest = 1,
    kLoginResponse = 2,
    kPing = 3,
    kPong = 4,
    kClose = 5,
    kServiceAnnounce = 10,
    kServiceAnnounceResponse = 11,
    kItemRegister = 12,
    kItemRegistered = 13,
    kFlush = 14,     // publisher -> distributor: acknowledge everything before this
    kFlushAck = 15,  // distributor -> publisher: everything before the Flush is taken
    kRefresh = 20,
    kUpdate = 21,
    kItemStatus = 22,
    kDirectory = 23,
    kGroupStatus = 24,  // server -> client: one status for every item of a service or source
    kDirectoryRequest = 30,
    kSubscribe = 31,
    kUnsubscribe = 32,
    kHeartbeat = 40,
    kImageRequest = 41,
    kDirectoryQuery = 42,
    kNak = 43,
    kRttProbe = 44,
    kRttEcho = 45,
    kInterest = 46,     // server -> distributor: items of interactive services held/released
    kMessagePart = 47,  // backbone: one part of a message larger than a datagram
    kPost = 48,         // a contribution upstream to a service's publisher (wire/post.proto)
    kPostAck = 49,      // the publisher's (or a hop's) answer to one Post
};

std::string_view frame_type_name(FrameType type);

// The frame types one side of a conversation accepts; anything else is a protocol error.
class FrameTypeSet {
  public:
    constexpr FrameTypeSet(std::initializer_list<FrameType> types) {
        for (FrameType t : types) bits_ |= bit(t);
    }
    constexpr bool contains(uint16_t raw) const { return raw < 64 && (bits_ & (1ull << raw)) != 0; }

  private:
    static constexpr uint64_t bit(FrameType t) { return 1ull << static_cast<uint16_t>(t); }
    uint64_t bits_ = 0;
};

// What a server accepts from a client, a distributor from a publisher, and so on.
extern const FrameTypeSet kClientToServerTypes;
extern const FrameTypeSet kServerToClientTypes;
extern const FrameTypeSet kPublisherToDistributorTypes;
extern const FrameTypeSet kDistributorToPublisherTypes;
extern const FrameTypeSet kBackboneDataTypes;
extern const FrameTypeSet kBackboneControlTypes;       // server -> distributor
extern const FrameTypeSet kBackboneControlReplyTypes;  // distributor -> server, unicast

struct FrameHeader {
    uint32_t body_bytes = 0;
    uint16_t type = 0;
    uint16_t flags = 0;
};

// A decoded frame pointing into the buffer it was read from.
struct Frame {
    FrameType type;
    std::span<const uint8_t> body;   // protobuf bytes
    std::span<const uint8_t> whole;  // header + body, for forwarding unchanged
};

// The flags a frame of this type may carry.
constexpr bool frame_flags_allowed(uint16_t type, uint16_t flags) {
    const bool data = type == static_cast<uint16_t>(FrameType::kRefresh) ||
                      type == static_cast<uint16_t>(FrameType::kUpdate);
    return flags == 0 || (data && flags == kFrameFlagMap);
}

void encode_frame_header(const FrameHeader& header, uint8_t* out);
FrameHeader decode_frame_header(const uint8_t* in);

// Serialises header + body into `out`, which must hold frame_bytes(message) bytes.
// Returns the number of bytes written.
size_t frame_bytes(const google::protobuf::MessageLite& message);
size_t encode_frame(FrameType type, const google::protobuf::MessageLite& message, uint8_t* out);

// Convenience for cold paths and tests.
std::string encode_frame_string(FrameType type, const google::protobuf::MessageLite& message);

}  // namespace mdcast::proto
