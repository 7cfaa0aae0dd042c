// The consumer's posts awaiting their answer (Consumer::post, docs/sdk.md
// "Posting"), on the I/O thread: each post's completion (the application's
// callback, or the promise behind its future), kept from the moment it
// is written to the server until its PostAck arrives, the connection ends
// (kConnectionLost: a post is never sent again after a failover, so the
// publisher never sees one twice) or the consumer stops (kCancelled). Bounded
// by the server, which answers or times out every post it took.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "mdcast/consumer.h"
#include "wire/post.pb.h"

namespace mdcast::sdk {

// Called once with the post's answer, on the I/O thread.
using PostDone = std::function<void(PostResult)>;

class ConsumerPosts {
  public:
    explicit ConsumerPosts(std::atomic<uint64_t>& accepted) : accepted_(accepted) {}

    // The answer is due for `post_id`.
    void sent(uint64_t post_id, PostDone done) { waiting_[post_id] = std::move(done); }
    // A PostAck from the server; one for no post waiting is ignored.
    void on_ack(const wire::v1::PostAck& ack);
    // Every post waiting is refused with `code` and `text`.
    void fail_all(StatusCode code, const std::string& text);
    size_t waiting() const { return waiting_.size(); }

    static void refuse(const PostDone& done, uint64_t post_id, StatusCode code, std::string text);

  private:
    std::unordered_map<uint64_t, PostDone> waiting_;
    std::atomic<uint64_t>& accepted_;
};

}  // namespace mdcast::sdk
