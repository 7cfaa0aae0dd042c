// Plain TCP helpers outside a connection's life: a blocking connect for tools
// and tests, and the text of a socket address for logs.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace mdcast {

// Blocking connect with a timeout, for tools and tests. Returns the socket or -1
// with `error` set.
int connect_tcp(const std::string& host, uint16_t port, int timeout_ms, std::string& error);

// "host:port" text for a socket address ("[v6]:port" for IPv6).
std::string format_address(const ::sockaddr* address);

}  // namespace mdcast
