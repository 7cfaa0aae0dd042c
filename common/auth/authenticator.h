// Login checks of one daemon (server: clients; distributor: publishers): the
// users file, the failed-login limit per peer address, the off-loop password
// verifier, the counters and the rate-limited log of refusals.
//
// Authentication is off unless auth.users_file is set: then every login is
// accepted and every subscription is allowed, as before (said at start-up).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/auth/credential_verifier.h"
#include "common/auth/peer_limiter.h"
#include "common/auth/users_file.h"
#include "common/logging.h"
#include "common/metrics.h"
#include "common/net/event_loop.h"
#include "wire/session.pb.h"

namespace mdcast::auth {

struct AuthSettings {
    std::string users_file;  // empty: authentication off
    uint32_t peer_failure_burst = 5;
    uint32_t peer_failure_refill_ms = 10000;
    uint32_t max_tracked_peers = 10000;
    VerifierSettings verifier;
};

struct AuthCounters {
    uint64_t accepted = 0;
    uint64_t failed = 0;        // unknown user or wrong password
    uint64_t rate_limited = 0;  // refused unchecked: too many failures from the peer
    uint64_t busy = 0;          // refused unchecked: too many checks waiting
    uint64_t reloads = 0;
    uint64_t reload_errors = 0;
};

struct LoginVerdict {
    enum class Kind { kAccepted, kBadCredentials, kRateLimited, kBusy };
    Kind kind = Kind::kAccepted;
    std::string text;                       // for the peer (LoginResponse status, Close)
    std::shared_ptr<const UserEntry> user;  // null when authentication is off
    bool accepted() const { return kind == Kind::kAccepted; }
};

// The LoginResponse that refuses a login (accepted=false, stream closed, the
// verdict's text; AUTH_FAILED for bad credentials, LIMIT_REACHED when refused
// unchecked), for the session to send before it closes auth_failed.
wire::v1::LoginResponse refusal_response(const LoginVerdict& verdict, const std::string& server_id);

class Authenticator {
  public:
    // Loads the users file when one is set; throws config::ConfigErrors (every
    // error with file:line) so that a daemon with a broken file does not start.
    // `peers` names who logs in, for the log ("client", "publisher").
    Authenticator(EventLoop& loop, const AuthSettings& settings, std::string peers);

    bool enabled() const { return users_ != nullptr; }

    // Loop thread. Calls `done` exactly once, on the loop thread: at once when
    // authentication is off, the credentials are cached, or the peer is refused
    // unchecked; else when the worker has checked the password.
    void check(const std::string& peer, const std::string& user, const std::string& password,
               std::function<void(const LoginVerdict&)> done);

    // The user's current entry (null: unknown, or authentication off).
    std::shared_ptr<const UserEntry> find(std::string_view user) const;

    // SIGHUP: re-reads the users file (at `fresh.users_file`) and takes the new
    // limits. Returns true when the users or their entitlements changed; a file
    // with errors is logged and the running rules stay. Turning authentication
    // on or off needs a restart (logged, not applied).
    bool reload(const AuthSettings& fresh);

    void register_metrics(MetricsRegistry& metrics);
    const AuthCounters& counters() const { return counters_; }

  private:
    void refuse(const std::string& peer, const std::string& user, LoginVerdict::Kind kind,
                const std::string& text, const std::function<void(const LoginVerdict&)>& done);
    void finish(const std::string& peer, const std::string& user, bool ok,
                std::shared_ptr<const UserEntry> entry,
                const std::function<void(const LoginVerdict&)>& done);

    AuthSettings settings_;
    std::string peers_;
    std::shared_ptr<spdlog::logger> log_;
    std::unique_ptr<UsersFile> users_;
    PeerLimiter limiter_;
    std::unique_ptr<CredentialVerifier> verifier_;
    PasswordHash dummy_;  // checked for unknown users, so they take as long as known ones
    std::string dummy_text_;
    AuthCounters counters_;
    log::RateLimiter refusal_log_limit_;
};

}  // namespace mdcast::auth
