#include "distributor/post_relay.h"

#include "proto/post_checks.h"

namespace mdcast::distributor {

namespace wire = ::mdcast::wire::v1;

void PostRelay::refuse(ServerId server, uint64_t post_id, wire::StatusCode code,
                       const std::string& text) {
    ++counters_.refused;
    link_.answer_server(server, proto::make_post_ack(post_id, false, code, text));
}

void PostRelay::forward(ServerId server, uint64_t session, wire::Post post, int64_t now) {
    uint32_t& outstanding = per_session_[session];
    if (outstanding >= settings_.max_outstanding_per_publisher) {
        return refuse(server, post.post_id(), wire::STATUS_LIMIT_REACHED,
                      "publishers.max_outstanding_posts (" +
                          std::to_string(settings_.max_outstanding_per_publisher) +
                          ") posts await this publisher's answer");
    }
    const uint64_t server_post_id = post.post_id();
    const int64_t deadline = now + int64_t{settings_.timeout_ms} * 1'000'000;
    const uint64_t id = waiting_.add({server, server_post_id, session}, deadline);
    post.set_post_id(id);
    if (!link_.send_to_publisher(session, post)) {
        waiting_.take(id);
        return refuse(server, server_post_id, wire::STATUS_NOT_FOUND,
                      "the service's publisher went away");
    }
    ++counters_.forwarded;
    ++outstanding;
}

void PostRelay::on_publisher_answer(uint64_t session, const wire::PostAck& ack) {
    const Waiting* post = waiting_.find(ack.post_id());
    if (!post || post->session != session) {
        ++counters_.late_answers;
        return;
    }
    ++(ack.accepted() ? counters_.accepted : counters_.rejected);
    // The publisher's text is its own: cut to the protocol's limit on the way.
    finish(*waiting_.take(ack.post_id()),
           proto::make_post_ack(0, ack.accepted(), ack.code(), ack.text()));
}

// Answers the server with its own post id.
void PostRelay::finish(const Waiting& post, const wire::PostAck& ack) {
    const auto count = per_session_.find(post.session);
    if (count != per_session_.end() && --count->second == 0) per_session_.erase(count);
    wire::PostAck answer = ack;
    answer.set_post_id(post.server_post_id);
    link_.answer_server(post.server, answer);
}

void PostRelay::expire(int64_t now) {
    waiting_.expire(now, [&](uint64_t, const Waiting& post) {
        ++counters_.timeouts;
        finish(post, proto::make_post_ack(0, false, wire::STATUS_SOURCE_DOWN,
                                          "timeout: the publisher did not answer within "
                                          "publishers.post_timeout_ms (" +
                                              std::to_string(settings_.timeout_ms) + " ms)"));
    });
}

void PostRelay::publisher_gone(uint64_t session) {
    for (const auto& [id, post] :
         waiting_.take_if([&](const Waiting& w) { return w.session == session; })) {
        ++counters_.refused;
        finish(post, proto::make_post_ack(0, false, wire::STATUS_SOURCE_DOWN,
                                          "the service's publisher went away before answering"));
    }
}

}  // namespace mdcast::distributor
