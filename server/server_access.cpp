// The server's side of access control: logins go to the Authenticator (the
// password check runs off the loop), requests are checked against the user's
// entitlements, and a SIGHUP that changes the users file is enforced on the
// clients already connected (docs/access-control.md).
#include "server/server.h"

namespace mdcast::server {

void Server::on_login_request(ClientSession& client, const wire::LoginRequest& request) {
    const uint64_t id = client.connection().id();
    auth_.check(client.connection().peer(), request.user(), request.password(),
                [this, id](const auth::LoginVerdict& verdict) {
                    ClientSession* asker = clients_.find(id);
                    // Gone or closing while its password was checked: nobody to answer.
                    if (!asker || !asker->is_open() || asker->connection().closing()) return;
                    if (verdict.accepted()) return asker->accept_login(verdict.user);
                    asker->refuse_login(verdict);
                });
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
