// How a parent server recognises a cascade link among its clients: an edge
// (server/cascade/tcp_upstream.cpp) logs in with the application id
// "mdcast-server/<instance>". The parent then applies its link policy
// (output.link_slow_consumer_policy): a WAN link that falls behind is
// conflated, never cut for slowness short of a hard bound. Claiming the role
// gains a client nothing it could harm others with: conflation is bounded by
// output.link_max_held_trades and the same output.max_bytes.
#pragma once

#include <string>
#include <string_view>

namespace mdcast::server {

inline constexpr std::string_view kLinkApplicationPrefix = "mdcast-server/";

inline std::string link_application_id(unsigned instance) {
    return std::string(kLinkApplicationPrefix) + std::to_string(instance);
}

inline bool is_cascade_link(std::string_view application_id) {
    return application_id.starts_with(kLinkApplicationPrefix);
}

}  // namespace mdcast::server
