// Messages larger than one backbone datagram: a directory of many services, the
// image of a record of hundreds of fields. The sender splits such a message into
// consecutive MessagePart frames (wire/backbone.proto), one per datagram; the
// receiver puts it back together and handles it as if it had come whole.
//
// The backbone hands a source's messages over in sequence order, each once
// (repairs fill gaps before anything later is delivered), so parts carry no
// message id: a message is the run of parts from offset 0 up to its size. Any
// other message between two parts, a part out of place or a size past the
// configured limit abandons the message in progress, which the caller counts
// and treats like loss. Memory is bounded by the one message being assembled.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mdcast::proto {

// Bytes a MessagePart frame spends on more than its data (frame header and the
// protobuf fields around the data, at their largest).
inline constexpr size_t kMessagePartOverheadBytes = 32;

// The MessagePart frames (header + body) that carry `frame`, a whole framed
// message, each at most `max_part_frame_bytes` long. `max_part_frame_bytes`
// must exceed kMessagePartOverheadBytes.
std::vector<std::string> split_message(std::span<const uint8_t> frame, size_t max_part_frame_bytes);

class MessageAssembler {
  public:
    // Messages (header + body) larger than `max_message_bytes` are refused.
    explicit MessageAssembler(size_t max_message_bytes) : max_message_bytes_(max_message_bytes) {}

    enum class Result {
        kPending,   // taken; more parts to come
        kComplete,  // whole() holds the message until the next call
        kRefused,   // malformed, out of place or too large: `why` says which;
                    // the message in progress (if any) is abandoned
    };
    // A MessagePart frame's body arrived.
    Result add(std::span<const uint8_t> part_body, std::string& why);
    // Something else arrived, or loss or a reset was seen: a message in
    // progress is abandoned. True when there was one.
    bool abandon();

    std::span<const uint8_t> whole() const {
        return {reinterpret_cast<const uint8_t*>(buffer_.data()), buffer_.size()};
    }
    bool in_progress() const { return expected_bytes_ != 0; }
    size_t max_message_bytes() const { return max_message_bytes_; }

  private:
    Result refuse(std::string& why, std::string text);

    size_t max_message_bytes_;
    size_t expected_bytes_ = 0;  // the message in progress; 0: none
    std::string buffer_;
};

}  // namespace mdcast::proto
