// Outgoing WebSocket frames, built once and sent as bytes: a server's frames
// are not masked, so the same bytes suit every subscriber of a view (the
// fan-out encodes an update once per view, never once per client). The
// framing is wslay's (wslay_frame_send), not ours.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mdcast::proto {

enum class WsOpcode : uint8_t {
    kText = 0x1,
    kBinary = 0x2,
    kClose = 0x8,
    kPing = 0x9,
    kPong = 0xA
};

// Appends one complete, unfragmented frame carrying `payload` to `out`.
void append_ws_frame(std::string& out, WsOpcode opcode, std::string_view payload);
// A text frame: `out` holds the payload from `from` on; it is replaced by the
// frame (the header goes in front of the payload, in place).
void frame_ws_text(std::string& out, size_t from);
// A close frame with the status code and reason (cut to fit a control frame).
std::string ws_close_frame(uint16_t code, std::string_view reason);

}  // namespace mdcast::proto
