// "host:port" arguments of the tools.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mdcast {

struct HostPort {
    std::string host;
    uint16_t port = 0;
};

// Parses "host:port" (port 1..65535); "[v6]:port" for IPv6. False on any error.
bool parse_host_port(const std::string& text, HostPort& out);
// Comma-separated list of host:port; false naming the bad entry in `error`.
bool parse_host_port_list(const std::string& text, std::vector<HostPort>& out, std::string& error);

}  // namespace mdcast
