// The multicast backbone built from the server's config: the one place that
// turns backbone.* and testing.loss.* keys into a BackboneReceiver.
#pragma once

#include <memory>

#include "common/net/event_loop.h"
#include "server/server_config.h"
#include "server/upstream.h"

namespace mdcast::server {

// Joins the groups and binds the control socket; throws std::runtime_error
// naming what failed (a key file, an address).
std::unique_ptr<Upstream> make_backbone_upstream(EventLoop& loop, const ServerConfig& config,
                                                 Upstream::Handler& handler);

}  // namespace mdcast::server
