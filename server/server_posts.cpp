// The server's side of posting (docs/protocol.md, "Posts"): a post from any
// session, binary or WebSocket, comes in at post_from_session(), is checked
// (well-formed, the item open on this stream or the service known, the user
// allowed to post there, the connection's bounds) and handed to the
// PostRouter, which sends it upstream and brings the answer back. Whatever is
// refused is answered at once with a PostAck saying why; nothing here waits.
#include "common/clock.h"
#include "proto/post_checks.h"
#include "proto/source_ids.h"
#include "server/server.h"

namespace mdcast::server {

namespace {

wire::PostAck refusal(uint64_t post_id, wire::StatusCode code, const std::string& text) {
    return proto::make_post_ack(post_id, false, code, text);
}

}  // namespace

void Server::post_from_session(ClientSession& client, const wire::Post& post) {
    posts_.count_received();
    if (auto refused = check_post_target(client, post)) {
        posts_.count_refused();
        return client.deliver(proto::FrameType::kPostAck, *refused);
    }
    const int64_t now = monotonic_ns();
    if (auto refused = posts_.admit(client.connection().id(), post.post_id(), now))
        return client.deliver(proto::FrameType::kPostAck, *refused);
    wire::Post forwarded = post;
    forwarded.set_user(proto::posting_user(client.user(), post.user()));
    forwarded.clear_server_id();  // the upstream stamps this server's own
    // On the stream of a redundancy follower: to the member feeding it.
    const CachedItem* item = post.item_id() != 0 ? cache_.find(post.item_id()) : nullptr;
    if (item && item->fed_by) forwarded.set_item_id(item->fed_by->id);
    const uint16_t source = forwarded.item_id() != 0
                                ? proto::item_source(forwarded.item_id())
                                : *recovery_.service_source(post.service_name());
    posts_.forward(client.connection().id(), source, std::move(forwarded), now);
}

// Why the post cannot go upstream (nullopt: it can): invalid, not open on
// this stream, an unknown service, or a user not allowed to post there.
std::optional<wire::PostAck> Server::check_post_target(const ClientSession& client,
                                                       const wire::Post& post) const {
    const uint64_t id = post.post_id();
    const proto::PostCheck check = proto::check_post(post);
    if (check.target == proto::PostTarget::kInvalid)
        return refusal(id, wire::STATUS_INVALID_REQUEST, std::string(check.error));
    std::string service = post.service_name(), name = post.item_name();
    if (check.target == proto::PostTarget::kOnStream) {
        const Fanout::Views* open = fanout_.subscriptions_of(client);
        const CachedItem* item = cache_.find(post.item_id());
        if (!open || !open->contains(post.item_id()) || !item)
            return refusal(id, wire::STATUS_NOT_FOUND,
                           "item " + std::to_string(post.item_id()) +
                               " is not open on this connection (post off-stream by name)");
        service = item->service_name;
        name = item->name;
    } else if (!recovery_.service_source(service)) {
        return refusal(id, wire::STATUS_NOT_FOUND,
                       "no such service: " + service + " (no distributor lists it)");
    }
    if (client.account() && !client.account()->entitlements.allows_post(service, name))
        return refusal(id, wire::STATUS_NOT_ENTITLED,
                       "user " + client.user() + " may not post to " + service + " " + name);
    return std::nullopt;
}

void Server::on_source_post_ack(uint16_t source, const wire::PostAck& ack) {
    posts_.on_answer(source, ack);
}

void Server::answer_client(uint64_t client_id, const wire::PostAck& ack) {
    ClientSession* client = clients_.find(client_id);
    if (client && client->is_open()) client->deliver(proto::FrameType::kPostAck, ack);
}

void Server::register_post_metrics(MetricsRegistry& m) {
    const PostCounters& c = posts_.counters();
    m.counter("posts_received_total", "Posts from clients, valid or not",
              [&c] { return c.received; });
    m.counter("posts_forwarded_total", "Posts sent upstream to a distributor",
              [&c] { return c.forwarded; });
    m.counter("posts_accepted_total", "Posts the publisher accepted", [&c] { return c.accepted; });
    m.counter("posts_rejected_total",
              "Posts refused upstream (the publisher, no publisher, its bounds)",
              [&c] { return c.rejected; });
    m.counter("posts_refused_total",
              "Posts refused by this server (invalid, not open, not entitled, posts.* bounds)",
              [&c] { return c.refused; });
    m.counter("posts_timeouts_total",
              "Posts refused \"timeout\": no answer within posts.timeout_ms",
              [&c] { return c.timeouts; });
    m.counter("posts_late_answers_total",
              "Answers for posts already timed out or whose client left",
              [&c] { return c.late_answers; });
    m.gauge("posts_outstanding", "Posts sent upstream awaiting their answer",
            [this] { return posts_.outstanding(); });
}

}  // namespace mdcast::server
