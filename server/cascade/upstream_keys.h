// The upstream.* keys of mdcast-server: where its items come from, the
// multicast backbone (the default) or parent servers over TCP (server/cascade/).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/config/config_schema.h"
#include "common/net/tls_context.h"

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
    bool upstream_standby_link = true;  // a second parent kept logged in, idle
    uint32_t upstream_resync_max_outstanding = 0;
    // TLS to the parent's clients.tls_port.
    bool upstream_tls = false;
    std::string upstream_tls_ca_file;    // empty: the system's trust store
    std::string upstream_tls_cert_file;  // a client certificate, when the parent asks for one
    std::string upstream_tls_key_file;
    std::string upstream_tls_server_name;  // what the parent's certificate must name (empty: host)
};

struct ServerConfig;
void add_upstream_keys(config::Schema<ServerConfig>& s);
// Start-up checks beyond the schema's rules: the password file reads, the TLS files load.
void check_upstream_files(const UpstreamKeys& keys, config::Problems& problems);
// The first line of upstream.password_file ("" when no file is set); throws
// std::runtime_error naming the key when it cannot be read.
std::string read_upstream_password(const UpstreamKeys& keys);
// The TLS context of the link (null: plaintext); throws std::runtime_error naming the
// key whose file does not load.
std::shared_ptr<const TlsContext> upstream_tls_context(const UpstreamKeys& keys);

}  // namespace mdcast::server
