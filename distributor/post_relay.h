// Posts between the servers and the publishers: a server's post, once the
// distributor has found the publisher that owns its service
// (distributor/distributor_posts.cpp), is given an id of the distributor's own,
// sent on that publisher's connection and remembered until the publisher
// answers; the answer goes back to the one server that posted, under the
// server's post id. Bounded: publishers.max_outstanding_posts unanswered per
// publisher connection (more are refused LIMIT_REACHED at once), and an
// answer not given within publishers.post_timeout_ms is a refusal "timeout".
// A publisher that goes away refuses its unanswered posts.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "common/awaiting_answers.h"
#include "distributor/backbone_out.h"
#include "wire/post.pb.h"

namespace mdcast::distributor {

struct PostRelayCounters {
    uint64_t received = 0;      // posts from servers
    uint64_t forwarded = 0;     // sent to a publisher
    uint64_t accepted = 0;      // publishers' answers: accepted
    uint64_t rejected = 0;      // publishers' answers: rejected
    uint64_t refused = 0;       // refused here: invalid, no publisher, bounds
    uint64_t timeouts = 0;      // no answer within publishers.post_timeout_ms
    uint64_t late_answers = 0;  // answers for posts no longer waiting (or never sent)
};

class PostRelay {
  public:
    class Link {
      public:
        // Sends the post on the publisher connection `session`; false when it is gone.
        virtual bool send_to_publisher(uint64_t session, const ::mdcast::wire::v1::Post& post) = 0;
        virtual void answer_server(ServerId server, const ::mdcast::wire::v1::PostAck& ack) = 0;

      protected:
        ~Link() = default;
    };
    struct Settings {
        uint32_t timeout_ms = 4000;
        uint32_t max_outstanding_per_publisher = 256;
    };

    // `settings` is read at every use (the keys reload).
    PostRelay(Link& link, const Settings& settings) : link_(link), settings_(settings) {}

    // Refuses a post from `server` at once (counted).
    void refuse(ServerId server, uint64_t post_id, ::mdcast::wire::v1::StatusCode code,
                const std::string& text);
    // Sends the post (its post_id the server's) to the publisher `session`.
    void forward(ServerId server, uint64_t session, ::mdcast::wire::v1::Post post, int64_t now);
    // A publisher's answer, by the distributor's post id.
    void on_publisher_answer(uint64_t session, const ::mdcast::wire::v1::PostAck& ack);
    void expire(int64_t now);
    // The publisher connection closed: its unanswered posts are refused.
    void publisher_gone(uint64_t session);

    size_t outstanding() const { return waiting_.size(); }
    const PostRelayCounters& counters() const { return counters_; }
    void count_received() { ++counters_.received; }

  private:
    struct Waiting {
        ServerId server;
        uint64_t server_post_id;
        uint64_t session;
    };
    void finish(const Waiting& post, const ::mdcast::wire::v1::PostAck& ack);

    Link& link_;
    const Settings& settings_;
    AwaitingAnswers<Waiting> waiting_;                    // by the distributor's post id
    std::unordered_map<uint64_t, uint32_t> per_session_;  // unanswered posts per publisher
    PostRelayCounters counters_;
};

}  // namespace mdcast::distributor
