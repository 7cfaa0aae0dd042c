#include "proto/frame.h"

#include <arpa/inet.h>

#include <cstring>

#include "wire/common.pb.h"

namespace mdcast::proto {

using enum FrameType;

const FrameTypeSet kClientToServerTypes{kLoginRequest,     kPing,      kPong,        kClose,
                                        kDirectoryRequest, kSubscribe, kUnsubscribe, kPost};
const FrameTypeSet kServerToClientTypes{kLoginResponse, kPing,   kPong,       kClose,
                                        kRefresh,       kUpdate, kItemStatus, kDirectory,
                                        kGroupStatus,   kPostAck};
const FrameTypeSet kPublisherToDistributorTypes{kLoginRequest,    kPing,         kPong,    kClose,
                                                kServiceAnnounce, kItemRegister, kRefresh, kUpdate,
                                                kItemStatus,      kFlush,        kPostAck};
// ItemStatus: a refused message; ImageRequest and Unsubscribe: interactive services.
const FrameTypeSet kDistributorToPublisherTypes{kLoginResponse,
                                                kPing,
                                                kPong,
                                                kClose,
                                                kServiceAnnounceResponse,
                                                kItemRegistered,
                                                kFlushAck,
                                                kItemStatus,
                                                kImageRequest,
                                                kUnsubscribe,
                                                kPost};
const FrameTypeSet kBackboneDataTypes{kRefresh,   kUpdate,    kItemStatus,
                                      kDirectory, kHeartbeat, kMessagePart};
const FrameTypeSet kBackboneControlTypes{kImageRequest, kDirectoryQuery, kNak,
                                         kRttProbe,     kInterest,       kPost};
const FrameTypeSet kBackboneControlReplyTypes{kRttEcho, kItemStatus, kPostAck};

std::string_view frame_type_name(FrameType type) {
    switch (type) {
        case kLoginRequest:
            return "LoginRequest";
        case kLoginResponse:
            return "LoginResponse";
        case kPing:
            return "Ping";
        case kPong:
            return "Pong";
        case kClose:
            return "Close";
        case kServiceAnnounce:
            return "ServiceAnnounce";
        case kServiceAnnounceResponse:
            return "ServiceAnnounceResponse";
        case kItemRegister:
            return "ItemRegister";
        case kItemRegistered:
            return "ItemRegistered";
        case kFlush:
            return "Flush";
        case kFlushAck:
            return "FlushAck";
        case kRefresh:
            return "Refresh";
        case kUpdate:
            return "Update";
        case kItemStatus:
            return "ItemStatus";
        case kDirectory:
            return "Directory";
        case kGroupStatus:
            return "GroupStatus";
        case kDirectoryRequest:
            return "DirectoryRequest";
        case kSubscribe:
            return "Subscribe";
        case kUnsubscribe:
            return "Unsubscribe";
        case kHeartbeat:
            return "Heartbeat";
        case kImageRequest:
            return "ImageRequest";
        case kDirectoryQuery:
            return "DirectoryQuery";
        case kNak:
            return "Nak";
        case kRttProbe:
            return "RttProbe";
        case kRttEcho:
            return "RttEcho";
        case kInterest:
            return "Interest";
        case kMessagePart:
            return "MessagePart";
        case kPost:
            return "Post";
        case kPostAck:
            return "PostAck";
    }
    return "unknown";
}

void encode_frame_header(const FrameHeader& header, uint8_t* out) {
    const uint32_t length = htonl(header.body_bytes);
    const uint16_t type = htons(header.type);
    const uint16_t flags = htons(header.flags);
    std::memcpy(out, &length, 4);
    std::memcpy(out + 4, &type, 2);
    std::memcpy(out + 6, &flags, 2);
}

FrameHeader decode_frame_header(const uint8_t* in) {
    uint32_t length;
    uint16_t type, flags;
    std::memcpy(&length, in, 4);
    std::memcpy(&type, in + 4, 2);
    std::memcpy(&flags, in + 6, 2);
    return FrameHeader{ntohl(length), ntohs(type), ntohs(flags)};
}

size_t frame_bytes(const google::protobuf::MessageLite& message) {
    return kFrameHeaderBytes + message.ByteSizeLong();
}

namespace {

// A Refresh carrying a book's map is flagged (kFrameFlagMap); nothing else is.
uint16_t flags_for(FrameType type, const google::protobuf::MessageLite& message) {
    if (type != FrameType::kRefresh) return 0;
    const auto* refresh = dynamic_cast<const wire::v1::Refresh*>(&message);
    return refresh && !refresh->map().empty() ? kFrameFlagMap : 0;
}

}  // namespace

size_t encode_frame(FrameType type, const google::protobuf::MessageLite& message, uint8_t* out) {
    const auto body = static_cast<uint32_t>(message.ByteSizeLong());
    encode_frame_header(FrameHeader{body, static_cast<uint16_t>(type), flags_for(type, message)},
                        out);
    message.SerializeWithCachedSizesToArray(out + kFrameHeaderBytes);
    return kFrameHeaderBytes + body;
}

std::string encode_frame_string(FrameType type, const google::protobuf::MessageLite& message) {
    std::string out(frame_bytes(message), '\0');
    encode_frame(type, message, reinterpret_cast<uint8_t*>(out.data()));
    return out;
}

}  // namespace mdcast::proto
