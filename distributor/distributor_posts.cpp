// The distributor's side of posting (docs/protocol.md, "Posts"): a server's
// post is checked again (the same check_post as at the server), its target
// found (the item by id, or the service by name) and handed to the PostRelay
// for the publisher that owns the service now. No publisher, or one that does
// not take posts, is a refusal at once, never a wait.
#include "common/clock.h"
#include "distributor/distributor.h"
#include "proto/post_checks.h"

namespace mdcast::distributor {

void Distributor::on_post(const wire::Post& post, ServerId from) {
    posts_.count_received();
    const proto::PostCheck check = proto::check_post(post);
    if (check.target == proto::PostTarget::kInvalid)
        return posts_.refuse(from, post.post_id(), wire::STATUS_INVALID_REQUEST,
                             std::string(check.error));
    ItemEntry* item = nullptr;
    ServiceEntry* service = nullptr;
    if (check.target == proto::PostTarget::kOnStream) {
        item = registry_.item(post.item_id());
        if (item) service = registry_.service(item->service_id);
    } else {
        service = registry_.service(post.service_name());
        if (service) item = registry_.find_item(service->id, post.item_name());
    }
    if (!service)
        return posts_.refuse(from, post.post_id(), wire::STATUS_NOT_FOUND,
                             "no such item or service on this distributor");
    PublisherSession* owner = open_session(service->owner_session);
    if (!owner || !owner->logged_in())
        return posts_.refuse(from, post.post_id(), wire::STATUS_NOT_FOUND,
                             "service " + service->name + " has no publisher now");
    if (!owner->takes_posts())
        return posts_.refuse(from, post.post_id(), wire::STATUS_NOT_FOUND,
                             "the publisher of " + service->name + " does not take posts");
    // The publisher sees names (and the id, for an item it registered).
    wire::Post out = post;
    out.set_service_name(service->name);
    out.set_item_name(item ? item->name : post.item_name());
    out.set_item_id(item ? item->id : 0);
    out.clear_server_id();
    posts_.forward(from, owner->connection().id(), std::move(out), monotonic_ns());
}

bool Distributor::send_to_publisher(uint64_t session, const wire::Post& post) {
    PublisherSession* owner = open_session(session);
    if (owner) owner->send_post(post);
    return owner != nullptr;
}

void Distributor::on_post_ack(PublisherSession& session, const wire::PostAck& ack) {
    posts_.on_publisher_answer(session.connection().id(), ack);
}

void Distributor::register_post_metrics() {
    auto& m = metrics_;
    const PostRelayCounters& c = posts_.counters();
    m.counter("posts_received_total", "Posts from servers", [&c] { return c.received; });
    m.counter("posts_forwarded_total", "Posts sent to a publisher", [&c] { return c.forwarded; });
    m.counter("posts_accepted_total", "Posts publishers accepted", [&c] { return c.accepted; });
    m.counter("posts_rejected_total", "Posts publishers rejected", [&c] { return c.rejected; });
    m.counter("posts_refused_total",
              "Posts refused here: invalid, no publisher, publishers.max_outstanding_posts, "
              "a publisher gone before answering",
              [&c] { return c.refused; });
    m.counter("posts_timeouts_total",
              "Posts refused \"timeout\": no answer within publishers.post_timeout_ms",
              [&c] { return c.timeouts; });
    m.counter("posts_late_answers_total", "Publisher answers for posts no longer waiting",
              [&c] { return c.late_answers; });
    m.gauge("posts_outstanding", "Posts sent to publishers awaiting their answer",
            [this] { return posts_.outstanding(); });
}

}  // namespace mdcast::distributor
