#include "proto/websocket/ws_frames.h"

#include <wslay/wslay.h>

#include <stdexcept>

namespace mdcast::proto {

namespace {

// One wslay frame context per thread whose send callback appends to `target`.
struct FrameWriter {
    wslay_frame_context_ptr context = nullptr;
    std::string* target = nullptr;

    static ssize_t on_send(const uint8_t* data, size_t length, int, void* self) {
        static_cast<FrameWriter*>(self)->target->append(reinterpret_cast<const char*>(data),
                                                        length);
        return static_cast<ssize_t>(length);
    }
    static ssize_t on_recv(uint8_t*, size_t, int, void*) { return -1; }
    static int on_mask(uint8_t*, size_t, void*) { return -1; }

    FrameWriter() {
        static const wslay_frame_callbacks callbacks{&on_send, &on_recv, &on_mask};
        if (wslay_frame_context_init(&context, &callbacks, this) != 0) throw std::bad_alloc();
    }
    ~FrameWriter() { wslay_frame_context_free(context); }

    void write(std::string& out, WsOpcode opcode, std::string_view payload) {
        target = &out;
        wslay_frame_iocb iocb{};
        iocb.fin = 1;
        iocb.opcode = static_cast<uint8_t>(opcode);
        iocb.payload_length = payload.size();
        size_t sent = 0;
        do {  // the callback takes everything: one call, unless the payload is empty
            iocb.data = reinterpret_cast<const uint8_t*>(payload.data()) + sent;
            iocb.data_length = payload.size() - sent;
            const ssize_t n = wslay_frame_send(context, &iocb);
            if (n < 0) throw std::runtime_error("wslay_frame_send failed");
            sent += static_cast<size_t>(n);
        } while (sent < payload.size());
    }
};

FrameWriter& writer() {
    thread_local FrameWriter instance;
    return instance;
}

}  // namespace

void append_ws_frame(std::string& out, WsOpcode opcode, std::string_view payload) {
    writer().write(out, opcode, payload);
}

void frame_ws_text(std::string& out, size_t from) {
    thread_local std::string payload;
    payload.assign(out, from, std::string::npos);
    out.resize(from);
    writer().write(out, WsOpcode::kText, payload);
}

std::string ws_close_frame(uint16_t code, std::string_view reason) {
    constexpr size_t kMaxReason = 123;  // control frames carry at most 125 bytes
    std::string payload{static_cast<char>(code >> 8), static_cast<char>(code & 0xff)};
    if (reason.size() > kMaxReason) {
        reason = reason.substr(0, kMaxReason);
        // Never cut a UTF-8 sequence in half: drop continuation bytes at the end.
        while (!reason.empty() && (static_cast<unsigned char>(reason.back()) & 0xC0) == 0x80)
            reason.remove_suffix(1);
        if (!reason.empty() && (static_cast<unsigned char>(reason.back()) & 0x80))
            reason.remove_suffix(1);
    }
    payload += reason;
    std::string frame;
    append_ws_frame(frame, WsOpcode::kClose, payload);
    return frame;
}

}  // namespace mdcast::proto
