// The auth.* configuration keys, the same for the server (clients) and the
// distributor (publishers): the daemons' config structs derive from AuthConfig,
// and add_auth_keys() binds its rows straight into the Authenticator's settings.
#pragma once

#include "common/auth/authenticator.h"
#include "common/config/config_schema.h"

namespace mdcast {

struct AuthConfig {
    auth::AuthSettings auth;  // every member is an auth.* key
};

template <class C>
void add_auth_keys(config::Schema<C>& s) {
    s.string(
         "auth.users_file", config::nested(&C::auth, &auth::AuthSettings::users_file), "",
         "Users file (docs/access-control.md): who may log in, with salted PBKDF2 password "
         "hashes made by mdcast-passwd, and (servers only) what each user and group may subscribe "
         "to. Empty: "
         "authentication off, every login accepted and everything allowed. Re-read on every "
         "SIGHUP; turning authentication on or off needs a restart.")
        .reloads();
    s.integer("auth.peer_failure_burst",
              config::nested(&C::auth, &auth::AuthSettings::peer_failure_burst), 5, 1, 1000000,
              "Failed logins one peer address may have in a row; past it the "
              "address is refused without a password check until it earns more.")
        .reloads();
    s.integer("auth.peer_failure_refill_ms",
              config::nested(&C::auth, &auth::AuthSettings::peer_failure_refill_ms), 10000, 1,
              86400000, "A peer address earns back one failed login this often.")
        .reloads();
    s.integer("auth.max_tracked_peers",
              config::nested(&C::auth, &auth::AuthSettings::max_tracked_peers), 10000, 1, 10000000,
              "Peer addresses with failed logins remembered; beyond it the least "
              "recently seen is forgotten.")
        .reloads();
    s.integer("auth.max_pending_logins",
              config::nested(&C::auth, &auth::AuthSettings::verifier,
                             &auth::VerifierSettings::max_queued),
              1000, 1, 1000000,
              "Distinct password checks waiting for the hashing thread; more "
              "logins are refused as busy (the SDK backs off and retries).")
        .reloads();
    s.integer("auth.cache_entries",
              config::nested(&C::auth, &auth::AuthSettings::verifier,
                             &auth::VerifierSettings::cache_entries),
              10000, 0, 10000000,
              "Verified credentials remembered (keyed HMAC, never the password) so "
              "a re-login skips the slow hash; 0: every login is hashed.")
        .reloads();
    s.integer("auth.cache_ttl_s",
              config::nested(&C::auth, &auth::AuthSettings::verifier,
                             &auth::VerifierSettings::cache_ttl_s),
              3600, 1, 31536000, "How long a verified credential stays in the cache.")
        .reloads();
    s.integer(
        "auth.hash_threads",
        config::nested(&C::auth, &auth::AuthSettings::verifier, &auth::VerifierSettings::threads),
        1, 1, 64,
        "Threads checking password hashes, off the event loop. Each check "
        "is about 150 ms of one core at 100,000 iterations: more threads "
        "let many distinct users log in at once (after a failover) where "
        "cores are free.");
    s.integer(
         "auth.max_hashes_per_s",
         config::nested(&C::auth, &auth::AuthSettings::verifier,
                        &auth::VerifierSettings::max_hashes_per_s),
         5, 0, 1000000,
         "Password hashes started per second, all peers together (a burst of one second's "
         "worth); beyond it a login that needs a hash is refused at once as busy (the SDK backs "
         "off and retries). Cache hits and logins sharing a check cost nothing. Bounds the CPU "
         "that guesses spread over many addresses can take: 5/s is about 75 % of one core at "
         "100,000 iterations. 0: unlimited.")
        .reloads();
}

// What the Authenticator runs with: the auth.* rows bind into it.
inline const auth::AuthSettings& auth_settings(const AuthConfig& c) {
    return c.auth;
}

// A SIGHUP that turns authentication on or off changes nothing of it (the
// authenticator refuses that reload whole): every changed auth.* key needs a restart.
inline std::vector<std::string> auth_keys_needing_restart(
    const AuthConfig& running, const AuthConfig& fresh,
    const std::vector<config::ConfigChange>& changes) {
    if (running.auth.users_file.empty() == fresh.auth.users_file.empty()) return {};
    return config::changed_under(changes, "auth");
}

}  // namespace mdcast
