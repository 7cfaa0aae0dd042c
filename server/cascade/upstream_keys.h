// The upstream.* keys of mdcast-server: where its items come from, the
// multicast backbone (the default) or parent servers over TCP (server/cascade/).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/config/config_schema.h"

namespace mdcast::server {

// The members the upstream.* rows fill; ServerConfig derives from it.
struct UpstreamKeys {
    std::string upstream_kind;  // "backbone" or "tcp"
    std::vector<std::string> upstream_parents;
    std::string upstream_user;
    std::string upstream_password_file;  // empty: no password
    uint32_t upstream_heartbeat_interval_ms = 0;
    uint32_t upstream_heartbeat_timeout_ms = 0;
    uint32_t upstream_reconnect_delay_ms = 0;
};

struct ServerConfig;
void add_upstream_keys(config::Schema<ServerConfig>& s);
// Start-up checks beyond the schema's rules: the password file reads.
void check_upstream_files(const UpstreamKeys& keys, config::Problems& problems);
// The first line of upstream.password_file ("" when no file is set); throws
// std::runtime_error naming the key when it cannot be read.
std::string read_upstream_password(const UpstreamKeys& keys);

}  // namespace mdcast::server
