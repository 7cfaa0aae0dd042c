#include "proto/websocket/ws_handshake.h"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>

namespace mdcast::proto {

namespace {

constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

std::string lower(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    return text;
}

// True when the comma-separated header value lists `token` (case-insensitive).
bool lists_token(const std::string* value, std::string_view token) {
    if (!value) return false;
    std::string_view rest = *value;
    while (!rest.empty()) {
        const size_t comma = rest.find(',');
        if (lower(trim(rest.substr(0, comma))) == token) return true;
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
    }
    return false;
}

// A Sec-WebSocket-Key is 16 random bytes in base64: 24 characters.
bool valid_client_key(const std::string* key) {
    if (!key || key->size() != 24) return false;
    unsigned char decoded[24];
    return EVP_DecodeBlock(decoded, reinterpret_cast<const unsigned char*>(key->data()), 24) == 18;
}

}  // namespace

const std::string* HttpRequest::header(const std::string& lower_name) const {
    const auto it = headers.find(lower_name);
    return it == headers.end() ? nullptr : &it->second;
}

std::optional<size_t> WsHandshake::head_length(std::string_view bytes) {
    const size_t end = bytes.find("\r\n\r\n");
    if (end == std::string_view::npos) return std::nullopt;
    return end + 4;
}

std::optional<HttpRequest> WsHandshake::parse(std::string_view head) {
    HttpRequest request;
    size_t line_end = head.find("\r\n");
    const std::string_view line = head.substr(0, line_end);
    const size_t first = line.find(' ');
    const size_t last = line.rfind(' ');
    if (first == std::string_view::npos || last == first || line.substr(last + 1) != "HTTP/1.1")
        return std::nullopt;
    request.method = std::string(line.substr(0, first));
    request.target = std::string(line.substr(first + 1, last - first - 1));
    while (line_end != std::string_view::npos && line_end + 2 < head.size()) {
        const size_t start = line_end + 2;
        line_end = head.find("\r\n", start);
        const std::string_view field = head.substr(start, line_end - start);
        if (field.empty()) break;
        const size_t colon = field.find(':');
        if (colon == std::string_view::npos || colon == 0) return std::nullopt;
        std::string& value = request.headers[lower(field.substr(0, colon))];
        if (!value.empty()) value += ", ";  // repeated header: one comma-separated list
        value += trim(field.substr(colon + 1));
    }
    return request;
}

std::string WsHandshake::accept_key(std::string_view client_key) {
    const std::string text = std::string(client_key) + std::string(kGuid);
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
    unsigned char encoded[4 * ((SHA_DIGEST_LENGTH + 2) / 3) + 1];
    const int n = EVP_EncodeBlock(encoded, digest, SHA_DIGEST_LENGTH);
    return std::string(reinterpret_cast<const char*>(encoded), static_cast<size_t>(n));
}

std::string WsHandshake::http_error(int code, std::string_view reason, std::string_view text) {
    return "HTTP/1.1 " + std::to_string(code) + " " + std::string(reason) +
           "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
           std::to_string(text.size() + 1) + "\r\nConnection: close\r\n\r\n" + std::string(text) +
           "\n";
}

WsHandshake::Answer WsHandshake::answer(const HttpRequest& request, const std::string& page) {
    Answer refused;
    if (request.method != "GET") {
        refused.why = "HTTP method " + request.method.substr(0, 16) + " (only GET)";
        refused.response = http_error(405, "Method Not Allowed", refused.why);
        return refused;
    }
    if (!lists_token(request.header("upgrade"), "websocket")) {
        const std::string path = request.target.substr(0, request.target.find('?'));
        if ((path == "/" || path == "/index.html") && !page.empty()) {
            return {
                Kind::kPage,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: " +
                    std::to_string(page.size()) +
                    "\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n" + page,
                ""};
        }
        refused.why = "no page at " + request.target.substr(0, 64);
        refused.response = http_error(404, "Not Found", refused.why);
        return refused;
    }
    const std::string* key = request.header("sec-websocket-key");
    const std::string* version = request.header("sec-websocket-version");
    if (!lists_token(request.header("connection"), "upgrade") || !valid_client_key(key) ||
        !version || *version != "13") {
        refused.why =
            "bad WebSocket handshake (needs Connection: Upgrade, a 16-byte "
            "Sec-WebSocket-Key and Sec-WebSocket-Version: 13)";
        refused.response = http_error(400, "Bad Request", refused.why);
        return refused;
    }
    std::string response =
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Accept: " +
        accept_key(*key) + "\r\n";
    if (lists_token(request.header("sec-websocket-protocol"), kJsonSubprotocol))
        response += "Sec-WebSocket-Protocol: " + std::string(kJsonSubprotocol) + "\r\n";
    return {Kind::kUpgrade, response + "\r\n", ""};
}

}  // namespace mdcast::proto
