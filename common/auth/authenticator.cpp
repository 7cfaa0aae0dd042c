#include "common/auth/authenticator.h"

#include "common/clock.h"
#include "common/config/config_schema.h"
#include "common/logging.h"

namespace mdcast::auth {

wire::v1::LoginResponse refusal_response(const LoginVerdict& verdict,
                                         const std::string& server_id) {
    namespace wire = mdcast::wire::v1;
    wire::LoginResponse response;
    response.set_accepted(false);
    auto* status = response.mutable_status();
    status->set_stream_state(wire::STREAM_CLOSED);
    status->set_data_state(wire::DATA_SUSPECT);
    status->set_code(verdict.kind == LoginVerdict::Kind::kBadCredentials
                         ? wire::STATUS_AUTH_FAILED
                         : wire::STATUS_LIMIT_REACHED);
    status->set_text(verdict.text);
    response.set_server_id(server_id);
    return response;
}

Authenticator::Authenticator(EventLoop& loop, const AuthSettings& settings, std::string peers)
    : settings_(settings),
      peers_(std::move(peers)),
      log_(log::get("auth")),
      limiter_(settings.peer_failure_burst, settings.peer_failure_refill_ms,
               settings.max_tracked_peers) {
    if (settings.users_file.empty()) {
        log_->info(
            "authentication off (auth.users_file not set): every {} login is accepted and "
            "every subscription allowed",
            peers_);
        return;
    }
    users_ = std::make_unique<UsersFile>(UsersFile::load(settings.users_file));
    verifier_ = std::make_unique<CredentialVerifier>(loop, settings.verifier);
    dummy_ = hash_password("mdcast-unknown-user", kDefaultIterations);
    dummy_text_ = dummy_.to_string();
    log_->info(
        "authentication on: {} users, {} groups from {}; {} failed logins per peer address, "
        "one more every {} ms",
        users_->size(), users_->group_count(), settings.users_file, settings.peer_failure_burst,
        settings.peer_failure_refill_ms);
}

std::shared_ptr<const UserEntry> Authenticator::find(std::string_view user) const {
    return users_ ? users_->find(user) : nullptr;
}

void Authenticator::check(const std::string& peer, const std::string& user,
                          const std::string& password,
                          std::function<void(const LoginVerdict&)> done) {
    if (!users_) {
        ++counters_.accepted;
        return done(LoginVerdict{});
    }
    const auto address = PeerLimiter::address_of(peer);
    if (!limiter_.allowed(address, monotonic_ns())) {
        return refuse(peer, user, LoginVerdict::Kind::kRateLimited,
                      "too many failed logins from " + std::string(address) + "; try again later",
                      done);
    }
    auto entry = users_->find(user);
    // An unknown user is checked against a dummy hash: the answer takes as long
    // as for a known user, so timing does not tell which names exist.
    const PasswordHash& stored = entry ? entry->password : dummy_;
    const std::string& stored_text = entry ? entry->password_text : dummy_text_;
    const auto result = verifier_->verify(
        user, password, stored, stored_text, [this, peer, user, entry, done](bool ok) {
            finish(peer, user, ok && entry != nullptr, entry, done);
        });
    if (result == CredentialVerifier::Result::kBusy) {
        refuse(peer, user, LoginVerdict::Kind::kBusy,
               "server busy checking other logins (auth.max_pending_logins); try again later",
               done);
    } else if (result == CredentialVerifier::Result::kOverBudget) {
        refuse(peer, user, LoginVerdict::Kind::kOverBudget,
               "server busy: password checks per second spent (auth.max_hashes_per_s); try again "
               "later",
               done);
    }
}

void Authenticator::finish(const std::string& peer, const std::string& user, bool ok,
                           std::shared_ptr<const UserEntry> entry,
                           const std::function<void(const LoginVerdict&)>& done) {
    if (!ok) {
        limiter_.on_failure(PeerLimiter::address_of(peer), monotonic_ns());
        return refuse(peer, user, LoginVerdict::Kind::kBadCredentials,
                      "unknown user or wrong password", done);
    }
    ++counters_.accepted;
    done(LoginVerdict{LoginVerdict::Kind::kAccepted, "", std::move(entry)});
}

void Authenticator::refuse(const std::string& peer, const std::string& user,
                           LoginVerdict::Kind kind, const std::string& text,
                           const std::function<void(const LoginVerdict&)>& done) {
    switch (kind) {
        case LoginVerdict::Kind::kRateLimited:
            ++counters_.rate_limited;
            break;
        case LoginVerdict::Kind::kBusy:
            ++counters_.busy;
            break;
        case LoginVerdict::Kind::kOverBudget:
            ++counters_.over_budget;
            break;
        default:
            ++counters_.failed;
    }
    uint64_t suppressed = 0;
    if (refusal_log_limit_.allow(suppressed)) {
        log_->warn(
            "{} login refused: peer {} user={}: {}{}", peers_, peer,
            log::escaped(user.substr(0, 64)), text,
            suppressed ? " (" + std::to_string(suppressed) + " more refusals not logged)" : "");
    }
    done(LoginVerdict{kind, text, nullptr});
}

bool Authenticator::reload(const AuthSettings& fresh) {
    if (fresh.users_file.empty() != settings_.users_file.empty()) {
        log_->warn("SIGHUP: turning authentication {} needs a restart; keeping it {}",
                   fresh.users_file.empty() ? "off" : "on", users_ ? "on" : "off");
        return false;
    }
    limiter_.configure(fresh.peer_failure_burst, fresh.peer_failure_refill_ms,
                       fresh.max_tracked_peers);
    if (verifier_) verifier_->configure(fresh.verifier);
    settings_ = AuthSettings{settings_.users_file, fresh.peer_failure_burst,
                             fresh.peer_failure_refill_ms, fresh.max_tracked_peers, fresh.verifier};
    if (!users_) return false;
    ++counters_.reloads;
    std::unique_ptr<UsersFile> loaded;
    try {
        loaded = std::make_unique<UsersFile>(UsersFile::load(fresh.users_file));
    } catch (const config::ConfigErrors& errors) {
        ++counters_.reload_errors;
        for (const auto& error : errors.errors()) log_->error("SIGHUP: {}", error.to_string());
        log_->error("SIGHUP: {} error(s) in the users file {}; keeping the running users and rules",
                    errors.errors().size(), fresh.users_file);
        return false;
    }
    settings_.users_file = fresh.users_file;
    const auto changes = UsersFile::differences(*users_, *loaded);
    users_ = std::move(loaded);
    if (changes.empty()) {
        log_->info("SIGHUP: users file {} re-read: unchanged ({} users)", settings_.users_file,
                   users_->size());
        return false;
    }
    for (const auto& change : changes)
        log_->info("SIGHUP: users file {}: {}", settings_.users_file, change);
    return true;
}

void Authenticator::register_metrics(MetricsRegistry& m) {
    const auto& c = counters_;
    m.counter("logins_accepted_total", "Logins accepted", [&c] { return c.accepted; });
    m.counter("logins_failed_total", "Logins refused: unknown user or wrong password",
              [&c] { return c.failed; });
    m.counter("logins_rate_limited_total",
              "Logins refused unchecked: too many failures from the peer address",
              [&c] { return c.rate_limited; });
    m.counter("logins_busy_total",
              "Logins refused unchecked: auth.max_pending_logins checks waiting",
              [&c] { return c.busy; });
    m.counter("logins_over_budget_total",
              "Logins refused unchecked: auth.max_hashes_per_s password hashes already started "
              "this second",
              [&c] { return c.over_budget; });
    m.counter("auth_reloads_total", "Users file re-read on SIGHUP", [&c] { return c.reloads; });
    m.counter("auth_reload_errors_total", "Users file reloads refused for errors",
              [&c] { return c.reload_errors; });
    m.gauge("auth_tracked_peers", "Peer addresses with failed logins tracked",
            [this] { return limiter_.tracked(); });
    const auto verifier = [this](auto read) {
        return verifier_ ? static_cast<double>(read(*verifier_)) : 0.0;
    };
    m.counter("auth_hashes_total", "Password hashes computed",
              [verifier] { return verifier([](auto& v) { return v.counters().hashes; }); });
    m.counter("auth_hash_seconds_total", "Worker time spent hashing passwords", [verifier] {
        return verifier([](auto& v) { return static_cast<double>(v.counters().hash_ns) / 1e9; });
    });
    m.counter("auth_cache_hits_total", "Logins answered from the verified-credentials cache",
              [verifier] { return verifier([](auto& v) { return v.counters().cache_hits; }); });
    m.counter("auth_joined_total", "Logins that waited for an identical check in progress",
              [verifier] { return verifier([](auto& v) { return v.counters().joined; }); });
    m.gauge("auth_pending", "Password checks waiting for or on the worker",
            [verifier] { return verifier([](auto& v) { return v.queued(); }); });
    m.gauge("auth_cached", "Verified credentials cached",
            [verifier] { return verifier([](auto& v) { return v.cached(); }); });
}

}  // namespace mdcast::auth
