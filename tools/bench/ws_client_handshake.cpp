#include "ws_client_handshake.h"

#include <netdb.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>

#include "proto/websocket/ws_handshake.h"

namespace mdcast::tools {

namespace {

std::string random_key() {
    unsigned char nonce[16];
    if (RAND_bytes(nonce, sizeof nonce) != 1) throw std::runtime_error("RAND_bytes failed");
    unsigned char text[32];
    const int n = EVP_EncodeBlock(text, nonce, sizeof nonce);
    return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(n));
}

// The value of a response header (name lower-case), or "".
std::string header_value(const std::string& head, const std::string& lower_name) {
    std::string lower(head);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const size_t at = lower.find("\r\n" + lower_name + ":");
    if (at == std::string::npos) return "";
    size_t from = at + lower_name.size() + 3;
    const size_t end = head.find("\r\n", from);
    while (from < end && head[from] == ' ') ++from;
    return head.substr(from, end - from);
}

}  // namespace

std::string text_of(const HostPort& server) {
    return server.host + ":" + std::to_string(server.port);
}

int connect_blocking(const HostPort& server, int timeout_s) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(server.port);
    if (const int rc = getaddrinfo(server.host.c_str(), port.c_str(), &hints, &found); rc != 0)
        throw std::runtime_error("cannot resolve " + text_of(server) + ": " + gai_strerror(rc));
    std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> list(found, freeaddrinfo);
    int last_errno = 0;
    for (const addrinfo* a = found; a; a = a->ai_next) {
        const int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        const timeval timeout{timeout_s, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) return fd;
        last_errno = errno;
        close(fd);
    }
    throw std::runtime_error("cannot connect to " + text_of(server) + ": " +
                             std::strerror(last_errno));
}

std::string ws_upgrade(int fd, const HostPort& server) {
    const std::string key = random_key();
    const std::string request = "GET /WebSocket HTTP/1.1\r\nHost: " + text_of(server) +
                                "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                "Sec-WebSocket-Key: " +
                                key + "\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: " +
                                std::string(proto::kJsonSubprotocol) + "\r\n\r\n";
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size()))
        throw std::runtime_error("handshake with " + text_of(server) +
                                 ": send failed: " + std::strerror(errno));
    std::string got;
    std::optional<size_t> head;
    while (!(head = proto::WsHandshake::head_length(got))) {
        char buffer[4096];
        const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0)
            throw std::runtime_error("handshake with " + text_of(server) + ": " +
                                     (n == 0 ? "connection closed before an answer"
                                             : std::string("no answer: ") + std::strerror(errno)));
        got.append(buffer, static_cast<size_t>(n));
        if (got.size() > proto::WsHandshake::kMaxHeadBytes)
            throw std::runtime_error("handshake with " + text_of(server) +
                                     ": answer head over 8 KiB");
    }
    const std::string response = got.substr(0, *head);
    const std::string status = response.substr(0, response.find("\r\n"));
    if (status.rfind("HTTP/1.1 101", 0) != 0)
        throw std::runtime_error("handshake refused by " + text_of(server) + ": " + status +
                                 (got.size() > *head ? " (" + got.substr(*head, 200) + ")" : ""));
    const std::string accept = header_value(response, "sec-websocket-accept");
    if (accept != proto::WsHandshake::accept_key(key))
        throw std::runtime_error("handshake with " + text_of(server) +
                                 ": wrong Sec-WebSocket-Accept '" + accept + "'");
    return got.substr(*head);
}

}  // namespace mdcast::tools
