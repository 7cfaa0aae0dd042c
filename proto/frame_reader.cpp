#include "proto/frame_reader.h"

#include <cstring>

namespace mdcast::proto {

std::string_view frame_error_name(FrameError error) {
    switch (error) {
        case FrameError::kNone:
            return "none";
        case FrameError::kTooLarge:
            return "frame_too_large";
        case FrameError::kUnknownType:
            return "unknown_frame_type";
        case FrameError::kBadFlags:
            return "bad_frame_flags";
    }
    return "unknown";
}

FrameReader::FrameReader(size_t max_body_bytes, FrameTypeSet accepted)
    : max_body_bytes_(max_body_bytes), accepted_(accepted) {}

std::span<uint8_t> FrameReader::prepare(size_t min_bytes) {
    // Move the unconsumed tail to the front before growing: the buffer never holds
    // more than one partial frame plus one read, so it stays bounded by
    // max_body_bytes + header + the read size.
    if (start_ > 0) {
        std::memmove(buffer_.data(), buffer_.data() + start_, end_ - start_);
        end_ -= start_;
        start_ = 0;
    }
    if (buffer_.size() - end_ < min_bytes) buffer_.resize(end_ + min_bytes);
    return {buffer_.data() + end_, buffer_.size() - end_};
}

void FrameReader::commit(size_t bytes) {
    end_ += bytes;
}

void FrameReader::append(std::span<const uint8_t> bytes) {
    if (bytes.empty()) return;  // memcpy with an empty, possibly null, buffer is undefined
    auto space = prepare(bytes.size());
    std::memcpy(space.data(), bytes.data(), bytes.size());
    commit(bytes.size());
}

FrameReader::Result FrameReader::fail(FrameError error, std::string text) {
    error_ = error;
    error_text_ = std::move(text);
    return Result::kError;
}

FrameReader::Result FrameReader::next(Frame& out) {
    if (error_ != FrameError::kNone) return Result::kError;
    const size_t available = end_ - start_;
    if (available < kFrameHeaderBytes) return Result::kNeedMore;
    const uint8_t* head = buffer_.data() + start_;
    const FrameHeader header = decode_frame_header(head);
    // Validate the header before waiting for the body so an oversized length is
    // refused at once rather than after buffering it.
    if (header.body_bytes > max_body_bytes_) {
        return fail(FrameError::kTooLarge, "frame body of " + std::to_string(header.body_bytes) +
                                               " bytes exceeds the limit of " +
                                               std::to_string(max_body_bytes_));
    }
    if (!accepted_.contains(header.type)) {
        return fail(FrameError::kUnknownType,
                    "frame type " + std::to_string(header.type) + " is not accepted here");
    }
    if (!frame_flags_allowed(header.type, header.flags)) {
        return fail(FrameError::kBadFlags, "frame flags " + std::to_string(header.flags) +
                                               " are not defined for this frame type");
    }
    const size_t total = kFrameHeaderBytes + header.body_bytes;
    if (available < total) return Result::kNeedMore;
    out.type = static_cast<FrameType>(header.type);
    out.whole = {head, total};
    out.body = {head + kFrameHeaderBytes, header.body_bytes};
    start_ += total;
    return Result::kFrame;
}

}  // namespace mdcast::proto
