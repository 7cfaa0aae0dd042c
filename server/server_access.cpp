// The server's side of access control: logins go to the Authenticator (the
// password check runs off the loop), requests are checked against the user's
// entitlements, and a SIGHUP that changes the users file is enforced on the
// clients already connected (docs/access-control.md).
#include "server/make_status.h"
#include "server/server.h"

namespace mdcast::server {

void Server::on_login_request(ClientSession& client, const wire::LoginRequest& request) {
    const uint64_t id = client.connection().id();
    auth_.check(client.connection().peer(), request.user(), request.password(),
                [this, id](const auth::LoginVerdict& verdict) {
                    ClientSession* asker = clients_.find(id);
                    // Gone or closing while its password was checked: nobody to answer.
                    if (!asker || !asker->is_open() || asker->connection().closing()) return;
                    if (verdict.accepted() && refuse_over_user_connections(*asker)) return;
                    if (verdict.accepted()) return asker->accept_login(verdict.user);
                    asker->refuse_login(verdict);
                });
}

// The asker is not logged in yet, so it is not among the user's connections counted.
bool Server::refuse_over_user_connections(ClientSession& client) {
    const uint32_t limit = config_.clients_max_connections_per_user;
    if (limit == 0) return false;
    size_t held = 0;
    for (const auto& [id, other] : clients_)
        held += other->is_open() && other->logged_in() && other->user() == client.user();
    if (held < limit) return false;
    ++counters_.user_connections_refused;
    uint64_t suppressed = 0;
    if (user_limit_log_.allow(suppressed)) {
        log_->warn(
            "{}: refused: user already holds clients.max_connections_per_user ({}){}",
            client.describe(), limit,
            suppressed ? fmt::format(" ({} more per-user refusals not logged)", suppressed) : "");
    }
    client.connection().close(CloseReason::kLimitReached,
                              "clients.max_connections_per_user (" + std::to_string(limit) +
                                  ") reached for user " + client.user());
    return true;
}

size_t Server::user_subscription_room(const ClientSession& client) const {
    const uint32_t limit = config_.clients_max_subscriptions_per_user;
    if (limit == 0) return SIZE_MAX;
    size_t held = 0;
    for (const auto& [id, other] : clients_) {
        if (other->is_open() && other->user() == client.user())
            held += fanout_.subscription_count(*other);
    }
    return held >= limit ? 0 : limit - held;
}

void Server::refuse_over_user_subscriptions(ClientSession& client, const std::string& service,
                                            const std::string& name) {
    ++counters_.user_subscriptions_refused;
    uint64_t suppressed = 0;
    if (user_limit_log_.allow(suppressed)) {
        log_->warn(
            "{}: subscription to {}/{} refused: clients.max_subscriptions_per_user ({}){}",
            client.describe(), service, name, config_.clients_max_subscriptions_per_user,
            suppressed ? fmt::format(" ({} more per-user refusals not logged)", suppressed) : "");
    }
    fanout_.send_status(
        client, service, name, 0,
        make_status(wire::STREAM_CLOSED, wire::DATA_SUSPECT, wire::STATUS_LIMIT_REACHED,
                    "clients.max_subscriptions_per_user reached"));
}

void Server::refuse_not_entitled(ClientSession& client, const std::string& service,
                                 const std::string& name, uint64_t item_id) {
    ++counters_.not_entitled;
    fanout_.send_status(client, service, name, item_id, not_entitled_status());
}

// The client's subscriptions its (new) entitlements no longer allow are closed
// "not entitled" and dropped exactly as an unsubscribe would drop them.
size_t Server::revoke_subscriptions(ClientSession& client) {
    std::vector<const CachedItem*> revoked;
    if (const Fanout::Views* held = fanout_.subscriptions_of(client)) {
        for (const auto& [item_id, view] : *held) {
            const CachedItem* item = cache_.find(item_id);
            if (item && !client.entitled(item->service_name, item->name)) revoked.push_back(item);
        }
    }
    for (const CachedItem* item : revoked) {
        fanout_.unsubscribe(client, item->id);
        release_if_unwatched(item->id);
        fanout_.send_status(client, item->service_name, item->name, item->id,
                            not_entitled_status());
    }
    return revoked.size();
}

// After a reload changed the users file: a client whose user is gone is closed
// (auth_failed, "user removed"); the others take their user's new entry (a
// changed password does not log anyone out) and lose what it no longer allows.
void Server::enforce_access() {
    size_t removed = 0, revoked = 0;
    for (auto& [id, client] : clients_) {
        if (!client->is_open() || !client->logged_in()) continue;
        auto account = auth_.find(client->user());
        if (!account) {
            ++removed;
            client->connection().close(CloseReason::kAuthFailed,
                                       "user removed from the users file");
            continue;
        }
        client->set_account(std::move(account));
        const size_t closed = revoke_subscriptions(*client);
        if (closed > 0)
            log_->info("SIGHUP: {}: {} subscription(s) closed: not entitled", client->describe(),
                       closed);
        revoked += closed;
    }
    counters_.users_removed += removed;
    counters_.entitlement_revocations += revoked;
    log_->info(
        "SIGHUP: access rules applied: {} subscription(s) closed not entitled, {} client(s) closed "
        "(user removed)",
        revoked, removed);
}

}  // namespace mdcast::server
