// What a WebSocket client sends the server before and after the upgrade: the
// HTTP request head (server/ws_handshake) and JSON request messages
// (server/json_requests), the first byte choosing which. Neither may crash,
// throw, or read out of bounds; every answer must be a complete HTTP response
// and every parsed request must respect the limits it was given.
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_input.h"
#include "proto/websocket/ws_handshake.h"
#include "server/websocket/json_requests.h"

namespace {

using mdcast::server::JsonError;

void fuzz_head(std::string_view bytes) {
    using mdcast::proto::WsHandshake;
    const auto length = WsHandshake::head_length(bytes);
    if (!length) return;
    const auto request = WsHandshake::parse(bytes.substr(0, *length));
    if (!request) return;
    const std::string page = "<html></html>";
    const auto answer = WsHandshake::answer(*request, page);
    if (answer.response.rfind("HTTP/1.1 ", 0) != 0 ||
        answer.response.find("\r\n\r\n") == std::string::npos)
        std::abort();
}

void fuzz_json(std::string_view text) {
    const mdcast::server::JsonLimits limits{4, 8, 8};
    const auto messages = mdcast::server::parse_json_requests(text, limits);
    if (messages.empty() || messages.size() > limits.max_messages) std::abort();
    for (const auto& message : messages) {
        if (message.error != JsonError::kNone) {
            if (message.error_text.empty()) std::abort();
            continue;
        }
        const auto& r = message.request;
        if (r.names.size() > limits.max_names || r.view.size() > limits.max_view ||
            r.close_ids.size() > limits.max_names)
            std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    mdcast::fuzz::FuzzInput input(data, size);
    const bool head = input.byte() & 1;
    const auto rest = input.rest();
    const std::string_view bytes(reinterpret_cast<const char*>(rest.data()), rest.size());
    if (head) {
        fuzz_head(bytes);
    } else {
        fuzz_json(bytes);
    }
    return 0;
}
