// Posts on their way through the server: every client's post that passed the
// server's checks (server/server_posts.cpp) is given an id of the server's
// own, sent to the distributor of its service, and remembered until its
// answer comes back, which goes to the one client that posted, with the
// client's own post id. Bounded at every step:
//  - posts.max_per_second per client (a token bucket: bursts up to one
//    second's worth), posts.max_outstanding unanswered per client;
//  - an answer that does not come within posts.timeout_ms is a refusal with
//    the text "timeout: ..." (the backbone's control datagrams can be lost;
//    a post is never sent twice, so a publisher never sees one twice);
//  - a client that goes away takes its unanswered posts with it (a late
//    answer is counted and dropped).
// Posts travel on the control path, apart from the data stream: a flood of
// posts is refused here and never delays an update.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/awaiting_answers.h"
#include "server/server_config.h"
#include "wire/post.pb.h"

namespace mdcast::server {

struct PostCounters {
    uint64_t received = 0;      // posts from clients, valid or not
    uint64_t forwarded = 0;     // sent upstream
    uint64_t accepted = 0;      // answers: the publisher accepted
    uint64_t rejected = 0;      // answers: refused upstream (publisher, entitlement, no publisher)
    uint64_t refused = 0;       // refused here: invalid, not entitled, limits, unroutable
    uint64_t timeouts = 0;      // no answer within posts.timeout_ms
    uint64_t late_answers = 0;  // an answer for a post already timed out or whose client left
};

class PostRouter {
  public:
    class Link {
      public:
        // The distributor `source` can be sent posts now (its control address is known).
        virtual bool source_ready(uint16_t source) const = 0;
        // Sends a post to a ready `source`; false when it cannot be carried (too large).
        virtual bool send_post(uint16_t source, ::mdcast::wire::v1::Post& post) = 0;
        // The answer for the client `client_id` (its connection id).
        virtual void answer_client(uint64_t client_id, const ::mdcast::wire::v1::PostAck& ack) = 0;

      protected:
        ~Link() = default;
    };

    // `config` is the running configuration: posts.* are read at every use (they reload).
    PostRouter(Link& link, const ServerConfig& config) : link_(link), config_(config) {}

    // The client's rate and outstanding bounds, at `now` (steady ns): nullopt
    // when the post may go on (and is counted against them), else the refusal.
    std::optional<::mdcast::wire::v1::PostAck> admit(uint64_t client_id, uint64_t post_id,
                                                     int64_t now);
    // Sends an admitted post to `source` under an id of the server's own; the
    // answer (or the refusal when it cannot be sent) reaches the client later.
    // A source not ready yet (a server that has just started) gets the post
    // as soon as it is, within posts.timeout_ms (retried at every expire()).
    void forward(uint64_t client_id, uint16_t source, ::mdcast::wire::v1::Post post, int64_t now);
    // An answer from upstream, for the post with the server's id ack.post_id.
    void on_answer(uint16_t source, const ::mdcast::wire::v1::PostAck& ack);
    // Sends the posts held for sources now ready; refuses with "timeout" every
    // post unanswered for posts.timeout_ms.
    void expire(int64_t now);
    // The client is gone: its posts are forgotten.
    void forget_client(uint64_t client_id);
    // Counts a post as it arrives, and one refused before it reached the router.
    void count_received() { ++counters_.received; }
    void count_refused() { ++counters_.refused; }

    size_t outstanding() const { return waiting_.size(); }
    const PostCounters& counters() const { return counters_; }

  private:
    struct Client {
        double tokens = 0;
        int64_t refilled_ns = 0;
        uint32_t outstanding = 0;
    };
    struct Waiting {
        uint64_t client_id;
        uint64_t client_post_id;
        uint16_t source;
        std::optional<::mdcast::wire::v1::Post> unsent;  // held for a source not ready yet
    };
    bool take_token(Client& client, int64_t now);
    void send(uint64_t id, Waiting& post, ::mdcast::wire::v1::Post& body);
    void send_held();
    void finish(const Waiting& post, const ::mdcast::wire::v1::PostAck& ack);

    Link& link_;
    const ServerConfig& config_;
    std::unordered_map<uint64_t, Client> clients_;  // clients with posts, by connection id
    AwaitingAnswers<Waiting> waiting_;              // by the server's post id
    std::vector<uint64_t> held_;                    // ids of posts waiting for their source
    PostCounters counters_;
};

}  // namespace mdcast::server
