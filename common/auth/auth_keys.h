// The auth.* configuration keys, the same for the server (clients) and the
// distributor (publishers): the daemons' config structs derive from
// AuthConfig, and add_auth_keys() declares its keys in their schemas.
#pragma once

#include "common/auth/authenticator.h"
#include "common/config/config_schema.h"

namespace mdcast {

struct AuthConfig {
    std::string auth_users_file;
    uint32_t auth_peer_failure_burst = 0;
    uint32_t auth_peer_failure_refill_ms = 0;
    uint32_t auth_max_tracked_peers = 0;
    uint32_t auth_max_pending_logins = 0;
    uint32_t auth_cache_entries = 0;
    uint32_t auth_cache_ttl_s = 0;
    uint32_t auth_hash_threads = 0;
};

template <class C>
void add_auth_keys(config::Schema<C>& s) {
    s.string(
        "auth.users_file", &C::auth_users_file, "",
        "Users file (docs/access-control.md): who may log in, with salted PBKDF2 password "
        "hashes made by mdcast-passwd, and (servers only) what each user and group may subscribe "
        "to. Empty: "
        "authentication off, every login accepted and everything allowed. Re-read on SIGHUP "
        "(turning it on or off needs a restart).");
    s.template integer<uint32_t>(
        "auth.peer_failure_burst", &C::auth_peer_failure_burst, 5, 1, 1000000,
        "Failed logins one peer address may have in a row; past it the "
        "address is refused without a password check until it earns more.");
    s.template integer<uint32_t>("auth.peer_failure_refill_ms", &C::auth_peer_failure_refill_ms,
                                 10000, 1, 86400000,
                                 "A peer address earns back one failed login this often.");
    s.template integer<uint32_t>(
        "auth.max_tracked_peers", &C::auth_max_tracked_peers, 10000, 1, 10000000,
        "Peer addresses with failed logins remembered; beyond it the least "
        "recently seen is forgotten.");
    s.template integer<uint32_t>("auth.max_pending_logins", &C::auth_max_pending_logins, 1000, 1,
                                 1000000,
                                 "Distinct password checks waiting for the hashing thread; more "
                                 "logins are refused as busy (the SDK backs off and retries).");
    s.template integer<uint32_t>(
        "auth.cache_entries", &C::auth_cache_entries, 10000, 0, 10000000,
        "Verified credentials remembered (keyed HMAC, never the password) so "
        "a re-login skips the slow hash; 0: every login is hashed.");
    s.template integer<uint32_t>("auth.cache_ttl_s", &C::auth_cache_ttl_s, 3600, 1, 31536000,
                                 "How long a verified credential stays in the cache.");
    s.template integer<uint32_t>("auth.hash_threads", &C::auth_hash_threads, 1, 1, 64,
                                 "Threads checking password hashes, off the event loop. Each check "
                                 "is about 150 ms of one core at 100,000 iterations: more threads "
                                 "let many distinct users log in at once (after a failover) where "
                                 "cores are free. Needs a restart.");
}

inline auth::AuthSettings auth_settings(const AuthConfig& c) {
    auth::AuthSettings s;
    s.users_file = c.auth_users_file;
    s.peer_failure_burst = c.auth_peer_failure_burst;
    s.peer_failure_refill_ms = c.auth_peer_failure_refill_ms;
    s.max_tracked_peers = c.auth_max_tracked_peers;
    s.verifier.max_queued = c.auth_max_pending_logins;
    s.verifier.cache_entries = c.auth_cache_entries;
    s.verifier.cache_ttl_s = c.auth_cache_ttl_s;
    s.verifier.threads = c.auth_hash_threads;
    return s;
}

// Every auth.* key reloads on SIGHUP except turning authentication on or off.
inline std::vector<std::string> reloadable_auth_keys(const AuthConfig& running,
                                                     const AuthConfig& fresh) {
    std::vector<std::string> keys{"auth.peer_failure_burst", "auth.peer_failure_refill_ms",
                                  "auth.max_tracked_peers",  "auth.max_pending_logins",
                                  "auth.cache_entries",      "auth.cache_ttl_s"};
    if (running.auth_users_file.empty() == fresh.auth_users_file.empty())
        keys.push_back("auth.users_file");
    return keys;
}

}  // namespace mdcast
