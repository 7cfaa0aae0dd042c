// A listening TCP socket on the event loop that hands accepted sockets to a callback.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/net/accept_guard.h"
#include "common/net/event_loop.h"

struct evconnlistener;
struct sockaddr;

namespace mdcast {

class TcpListener {
  public:
    // (socket, "host:port" of the peer). The callback owns the socket.
    using AcceptCallback = std::function<void(int fd, std::string peer)>;

    // Binds address:port (port 0 picks a free port; see port()). Throws
    // std::runtime_error naming the address on failure. Running out of
    // descriptors pauses accepting (AcceptGuard) instead of spinning.
    TcpListener(EventLoop& loop, const std::string& address, uint16_t port, int backlog,
                AcceptCallback on_accept);
    ~TcpListener();
    TcpListener(const TcpListener&) = delete;
    TcpListener& operator=(const TcpListener&) = delete;

    uint16_t port() const { return port_; }
    // Stops accepting (shutdown); existing connections are not affected.
    void disable();

  private:
    static void on_accept(evconnlistener*, int fd, struct sockaddr* address, int, void* self);
    AcceptCallback callback_;
    evconnlistener* listener_ = nullptr;
    std::unique_ptr<AcceptGuard> guard_;
    uint16_t port_ = 0;
};

}  // namespace mdcast
