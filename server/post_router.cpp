#include "server/post_router.h"

#include <algorithm>

#include "proto/post_checks.h"

namespace mdcast::server {

namespace wire = ::mdcast::wire::v1;

// A bucket of posts.max_per_second tokens, refilled continuously: a client
// may post a second's worth at once, then at the configured rate.
bool PostRouter::take_token(Client& client, int64_t now) {
    const double rate = config_.posts_max_per_second;
    if (client.refilled_ns == 0) {
        client.tokens = rate;
    } else if (now > client.refilled_ns) {
        client.tokens = std::min(
            rate, client.tokens + rate * static_cast<double>(now - client.refilled_ns) / 1e9);
    }
    client.refilled_ns = now;
    if (client.tokens < 1) return false;
    client.tokens -= 1;
    return true;
}

std::optional<wire::PostAck> PostRouter::admit(uint64_t client_id, uint64_t post_id, int64_t now) {
    Client& client = clients_[client_id];
    std::string why;
    if (client.outstanding >= config_.posts_max_outstanding) {
        why = "posts.max_outstanding (" + std::to_string(config_.posts_max_outstanding) +
              ") posts of this connection await their answer";
    } else if (!take_token(client, now)) {
        why = "posts.max_per_second (" + std::to_string(config_.posts_max_per_second) +
              ") reached on this connection";
    } else {
        return std::nullopt;
    }
    ++counters_.refused;
    return proto::make_post_ack(post_id, false, wire::STATUS_LIMIT_REACHED, why);
}

void PostRouter::forward(uint64_t client_id, uint16_t source, wire::Post post, int64_t now) {
    ++clients_[client_id].outstanding;
    const int64_t deadline = now + int64_t{config_.posts_timeout_ms} * 1'000'000;
    const uint64_t id = waiting_.add({client_id, post.post_id(), source, std::nullopt}, deadline);
    Waiting& waiting = *waiting_.find(id);
    if (link_.source_ready(source)) return send(id, waiting, post);
    waiting.unsent = std::move(post);
    held_.push_back(id);
}

// Sends `body` as post `id`; one too large for the backbone is refused at once.
void PostRouter::send(uint64_t id, Waiting& post, wire::Post& body) {
    body.set_post_id(id);
    if (link_.send_post(post.source, body)) {
        ++counters_.forwarded;
        return;
    }
    ++counters_.refused;
    finish(*waiting_.take(id),
           proto::make_post_ack(0, false, wire::STATUS_LIMIT_REACHED,
                                "the post does not fit one backbone control datagram"));
}

void PostRouter::send_held() {
    std::erase_if(held_, [&](uint64_t id) {
        Waiting* post = waiting_.find(id);
        if (!post) return true;  // timed out or its client gone
        if (!link_.source_ready(post->source)) return false;
        wire::Post body = std::move(*post->unsent);
        post->unsent.reset();
        send(id, *post, body);
        return true;
    });
}

void PostRouter::on_answer(uint16_t source, const wire::PostAck& ack) {
    const Waiting* post = waiting_.find(ack.post_id());
    if (!post || post->source != source) {
        ++counters_.late_answers;
        return;
    }
    ++(ack.accepted() ? counters_.accepted : counters_.rejected);
    finish(*waiting_.take(ack.post_id()), ack);
}

// Answers the client with its own post id.
void PostRouter::finish(const Waiting& post, const wire::PostAck& ack) {
    const auto client = clients_.find(post.client_id);
    if (client != clients_.end() && client->second.outstanding > 0) --client->second.outstanding;
    wire::PostAck answer = ack;
    answer.set_post_id(post.client_post_id);
    link_.answer_client(post.client_id, answer);
}

void PostRouter::expire(int64_t now) {
    send_held();
    waiting_.expire(now, [&](uint64_t, const Waiting& post) {
        ++counters_.timeouts;
        finish(post, proto::make_post_ack(0, false, wire::STATUS_SOURCE_DOWN,
                                          "timeout: no answer from the publisher within "
                                          "posts.timeout_ms (" +
                                              std::to_string(config_.posts_timeout_ms) + " ms)"));
    });
}

void PostRouter::forget_client(uint64_t client_id) {
    if (clients_.erase(client_id) == 0) return;
    waiting_.take_if([&](const Waiting& post) { return post.client_id == client_id; });
}

}  // namespace mdcast::server
