// The client side of a WebSocket connection's setup, for the bench's WebSocket
// client (ws_consumer_load.cpp): a blocking connect and the HTTP upgrade, with
// the server's Sec-WebSocket-Accept checked.
#pragma once

#include <string>

#include "common/net/host_port.h"

namespace mdcast::tools {

// "host:port".
std::string text_of(const HostPort& server);

// A blocking TCP connection with send and receive timeouts of `timeout_s` (the
// setup phase). Throws with the reason when no address of `server` answers.
int connect_blocking(const HostPort& server, int timeout_s);

// The HTTP upgrade (subprotocol tr_json2) on a blocking socket. Returns the bytes
// read past the response head (the first frames); throws with the server's answer
// when refused.
std::string ws_upgrade(int fd, const HostPort& server);

}  // namespace mdcast::tools
