#include "common/net/tcp_listener.h"

#include <arpa/inet.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <stdexcept>

#include "common/logging.h"
#include "common/net/tcp_connection.h"
#include "common/net/tcp_dial.h"

namespace mdcast {

namespace {

sockaddr_storage parse_address(const std::string& address, uint16_t port, socklen_t& length) {
    sockaddr_storage storage{};
    auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
    if (inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        length = sizeof(sockaddr_in);
    } else if (inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        length = sizeof(sockaddr_in6);
    } else {
        throw std::runtime_error("'" + address + "' is not an IP address");
    }
    return storage;
}

}  // namespace

TcpListener::TcpListener(EventLoop& loop, const std::string& address, uint16_t port, int backlog,
                         AcceptCallback on_accept)
    : callback_(std::move(on_accept)) {
    socklen_t length = 0;
    sockaddr_storage bind_address = parse_address(address, port, length);
    listener_ = evconnlistener_new_bind(
        loop.base(), &TcpListener::on_accept, this,
        LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, backlog,
        reinterpret_cast<sockaddr*>(&bind_address), static_cast<int>(length));
    if (!listener_) {
        throw std::runtime_error("cannot listen on " + address + ":" + std::to_string(port) + ": " +
                                 std::strerror(errno));
    }
    sockaddr_storage bound{};
    socklen_t bound_length = sizeof bound;
    getsockname(evconnlistener_get_fd(listener_), reinterpret_cast<sockaddr*>(&bound),
                &bound_length);
    port_ = ntohs(bound.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                                             : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
    guard_ = std::make_unique<AcceptGuard>(loop, listener_, address + ":" + std::to_string(port_));
}

TcpListener::~TcpListener() {
    guard_.reset();
    if (listener_) evconnlistener_free(listener_);
}

void TcpListener::disable() {
    guard_.reset();  // a pause in progress must not resume it
    if (listener_) evconnlistener_disable(listener_);
}

void TcpListener::on_accept(evconnlistener*, int fd, sockaddr* address, int, void* self) {
    std::string peer = format_address(address);
    try {
        static_cast<TcpListener*>(self)->callback_(fd, peer);
    } catch (const std::exception& error) {  // never into libevent
        log::get("listener")->error("cannot take the connection from {}: {}", peer, error.what());
    }
}

}  // namespace mdcast
