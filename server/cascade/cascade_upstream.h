// The TCP upstream built from the server's config: the one place that turns
// upstream.* keys into a TcpUpstream (as backbone_upstream.h does for backbone.*).
#pragma once

#include <memory>

#include "common/net/event_loop.h"
#include "server/server_config.h"
#include "server/upstream.h"

namespace mdcast::server {

// Throws std::runtime_error naming the key that does not work.
std::unique_ptr<Upstream> make_tcp_upstream(EventLoop& loop, const ServerConfig& config,
                                            Upstream::Handler& handler);

}  // namespace mdcast::server
