// Start-up checks of a daemon's configuration that the key ranges cannot express,
// shared by the server and the distributor. Two kinds:
//   - rules between keys (a multicast group, at least one listener, distinct ports),
//     given to Schema::rule() and so checked on every load, SIGHUP included;
//   - files the configuration names (TLS certificate and key, users file, backbone
//     keys, the web page, the log file's directory), loaded once by --check-config and
//     at start-up (a SIGHUP re-reads them itself and keeps the running ones when they
//     fail), and the host itself (addresses to bind are on it);
// Each adds a config::Problem naming the key to fix; none needs a running system, so
// --check-config refuses what the daemon would refuse at start (exit 1 otherwise).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/config/config_schema.h"
#include "common/net/tls_context.h"

namespace mdcast::config {

// `group` must be an IPv4 multicast address (224.0.0.0/4).
void require_multicast_group(const std::string& key, const std::string& group, Problems& problems);
// Every entry of `groups` must be GROUP:PORT with a multicast GROUP.
void require_multicast_groups(const std::string& key, const std::vector<std::string>& groups,
                              Problems& problems);
// `section`.plaintext or `section`.tls must be on, else nobody can connect.
void require_listener(const std::string& section, bool plaintext, bool tls, Problems& problems);

// A TCP port a daemon binds: the key, the port, and whether that listener is on.
struct BoundPort {
    std::string key;
    uint32_t port = 0;  // wider than uint16_t: instance offsets may push it past 65535
    bool enabled = true;
};
// Every enabled port fits in 1..65535 and no two enabled non-zero ports are equal
// (0 picks a free port and cannot collide).
void require_distinct_ports(const std::vector<BoundPort>& ports, Problems& problems);
// No enabled non-zero port of `ours` is one of `theirs` (another process's ports on
// this host, named by `whose`, e.g. "instance 1").
void require_ports_apart(const std::vector<BoundPort>& ours, const std::vector<BoundPort>& theirs,
                         const std::string& whose, Problems& problems);
// `address` is one this host can bind (an address of one of its interfaces, or a
// wildcard): bound once to port 0, so nothing else notices.
void require_local_address(const std::string& key, const std::string& address, Problems& problems);
// `dir`, when set, holds a readable index.html.
void check_web_dir(const std::string& key, const std::string& dir, Problems& problems);
// `path`, when set, is a file the daemon can open for appending: its directory exists
// or can be made (the first existing ancestor is a writable directory).
void check_log_file(const std::string& key, const std::string& path, Problems& problems);

// The certificate and key load and match (and the CA file when client certificates are
// asked for); checked only when `enabled`.
void check_tls_files(bool enabled, const TlsServerSettings& settings, Problems& problems);
// The users file parses (every error of its own is in the message); empty: auth off.
void check_users_file(const std::string& key, const std::string& path, Problems& problems);
// The admin token file, when set, holds a usable token.
void check_admin_token(const std::string& key, const std::string& path, Problems& problems);
// Descriptors the daemon needs beyond one per connection: listeners, the
// admin endpoint's connections (admin.max_connections), the backbone sockets,
// the log, the event loop's own, the accept reserve.
inline constexpr uint64_t kReservedDescriptors = 64;
// `connections` (the key's value) plus kReservedDescriptors fit under the hard
// RLIMIT_NOFILE of this process (the soft one is raised to it at start-up:
// raise_descriptor_limit). Otherwise accept() runs out of descriptors before
// the key's limit is reached.
void check_descriptor_limit(const std::string& key, uint64_t connections, Problems& problems);
// Raises the soft RLIMIT_NOFILE towards the hard one so that `connections` plus
// kReservedDescriptors fit. Returns the soft limit in force afterwards.
uint64_t raise_descriptor_limit(uint64_t connections);
// Each backbone key file that is set holds a usable key.
void check_key_files(const std::string& section, const std::string& key_file,
                     const std::string& previous_key_file, Problems& problems);

}  // namespace mdcast::config
