// The HTTP side of the WebSocket port: the opening handshake (RFC 6455
// section 4.2) and the plain GET of the watchlist page.
//
// Reads one request head (bounded: kMaxHeadBytes), decides what it is and
// builds the answer; the session does the I/O. The accept key is SHA-1 and
// base64 from OpenSSL, as the RFC prescribes.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace mdcast::proto {

// The subprotocol LSEG's WebSocket API names; echoed when the client offers it.
inline constexpr std::string_view kJsonSubprotocol = "tr_json2";

struct HttpRequest {
    std::string method;
    std::string target;
    std::map<std::string, std::string> headers;  // names lower-cased
    const std::string* header(const std::string& lower_name) const;
};

class WsHandshake {
  public:
    static constexpr size_t kMaxHeadBytes = 8192;

    enum class Kind { kUpgrade, kPage, kRefused };
    struct Answer {
        Kind kind = Kind::kRefused;
        std::string response;  // the HTTP bytes to send
        std::string why;       // kRefused: for the log and the close reason
    };

    // The length of the request head in `bytes` ("\r\n\r\n" included), or nullopt
    // when it is not complete yet.
    static std::optional<size_t> head_length(std::string_view bytes);
    // Parses a complete head; nullopt when it is not an HTTP/1.1 request.
    static std::optional<HttpRequest> parse(std::string_view head);
    // The answer: 101 for a valid upgrade, 200 with `page` for GET / (when
    // `page` is not empty), 400/404/405 otherwise.
    static Answer answer(const HttpRequest& request, const std::string& page);
    // Sec-WebSocket-Accept for a client's Sec-WebSocket-Key.
    static std::string accept_key(std::string_view client_key);
    static std::string http_error(int code, std::string_view reason, std::string_view text);
};

}  // namespace mdcast::proto
