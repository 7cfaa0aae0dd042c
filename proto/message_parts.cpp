#include "proto/message_parts.h"

#include <algorithm>

#include "proto/frame.h"
#include "wire/backbone.pb.h"

namespace mdcast::proto {

std::vector<std::string> split_message(std::span<const uint8_t> frame,
                                       size_t max_part_frame_bytes) {
    const size_t chunk = max_part_frame_bytes - kMessagePartOverheadBytes;
    std::vector<std::string> parts;
    parts.reserve((frame.size() + chunk - 1) / chunk);
    wire::v1::MessagePart part;
    part.set_total_bytes(static_cast<uint32_t>(frame.size()));
    for (size_t offset = 0; offset < frame.size(); offset += chunk) {
        const size_t n = std::min(chunk, frame.size() - offset);
        part.set_offset(static_cast<uint32_t>(offset));
        part.set_data(frame.data() + offset, n);
        parts.push_back(encode_frame_string(FrameType::kMessagePart, part));
    }
    return parts;
}

MessageAssembler::Result MessageAssembler::refuse(std::string& why, std::string text) {
    abandon();
    why = std::move(text);
    return Result::kRefused;
}

MessageAssembler::Result MessageAssembler::add(std::span<const uint8_t> part_body,
                                               std::string& why) {
    wire::v1::MessagePart part;
    if (!part.ParseFromArray(part_body.data(), static_cast<int>(part_body.size())) ||
        part.data().empty()) {
        return refuse(why, "malformed message part");
    }
    if (part.offset() == 0) {
        const bool cut = abandon();
        if (part.total_bytes() > max_message_bytes_) {
            return refuse(why, "message of " + std::to_string(part.total_bytes()) +
                                   " bytes is over the limit of " +
                                   std::to_string(max_message_bytes_));
        }
        if (cut) return refuse(why, "a new message began before the last one was whole");
        expected_bytes_ = part.total_bytes();
        buffer_.clear();
        buffer_.reserve(expected_bytes_);
    } else if (!in_progress() || part.offset() != buffer_.size() ||
               part.total_bytes() != expected_bytes_) {
        return refuse(why, "message part out of place");
    }
    if (buffer_.size() + part.data().size() > expected_bytes_) {
        return refuse(why, "message parts longer than the message");
    }
    buffer_ += part.data();
    if (buffer_.size() < expected_bytes_) return Result::kPending;
    expected_bytes_ = 0;  // whole; buffer_ holds it until the next call
    return Result::kComplete;
}

bool MessageAssembler::abandon() {
    const bool was = in_progress();
    expected_bytes_ = 0;
    buffer_.clear();
    return was;
}

}  // namespace mdcast::proto
