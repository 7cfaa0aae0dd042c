// Posts an edge server sent its parent (server/cascade/tcp_upstream.h) and
// not yet answered: the post id (the edge's own, from its PostRouter) and the
// source it is for, so the parent's PostAck goes back to the right place.
//
// The parent treats the edge as a client: it checks the edge's own post rules,
// routes the post to the publisher and answers with the same post id. A link
// lost before an answer refuses every post in flight at once (the edge's
// clients are told the link went, instead of waiting for posts.timeout_ms);
// such a post may or may not have reached the publisher, and it is never sent
// again. Bounded: a post is refused, not held, past kMaxInFlight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "wire/post.pb.h"

namespace mdcast::server {

class ParentPosts {
  public:
    static constexpr size_t kMaxInFlight = 65536;
    using Answer = std::pair<uint16_t, ::mdcast::wire::v1::PostAck>;  // source, ack

    // Remembers a post about to be sent; false (not sent) when too many are in
    // flight or its id is already waiting.
    bool start(uint64_t post_id, uint16_t source);
    // A post that could not be written after all.
    void forget(uint64_t post_id) { in_flight_.erase(post_id); }
    // The parent's answer, with the source it is for; nullopt for an id not
    // waiting (counted: an answer after the link was lost and found again).
    std::optional<Answer> answer(const ::mdcast::wire::v1::PostAck& ack);
    // The link is gone: every post in flight, refused with `why`.
    std::vector<Answer> link_lost(const std::string& why);

    size_t in_flight() const { return in_flight_.size(); }
    uint64_t unknown_answers() const { return unknown_answers_; }

  private:
    std::unordered_map<uint64_t, uint16_t> in_flight_;
    uint64_t unknown_answers_ = 0;
};

}  // namespace mdcast::server
