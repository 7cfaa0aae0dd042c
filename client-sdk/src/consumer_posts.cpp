#include "consumer_posts.h"

#include "consumer_core.h"

namespace mdcast::sdk {

void ConsumerPosts::refuse(const PostDone& done, uint64_t post_id, StatusCode code,
                           std::string text) {
    done(PostResult{post_id, false, code, std::move(text)});
}

void ConsumerPosts::on_ack(const wire::v1::PostAck& ack) {
    const auto it = waiting_.find(ack.post_id());
    if (it == waiting_.end()) return;
    const PostDone done = std::move(it->second);
    waiting_.erase(it);
    if (ack.accepted()) accepted_.fetch_add(1, std::memory_order_relaxed);
    done(
        PostResult{ack.post_id(), ack.accepted(), static_cast<StatusCode>(ack.code()), ack.text()});
}

void ConsumerPosts::fail_all(StatusCode code, const std::string& text) {
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& [id, done] : waiting) refuse(done, id, code, text);
}

// ConsumerCore's post(), kept here with the rest of the posts' bookkeeping.
void ConsumerCore::post(ItemHandle handle, wire::v1::Post& post, PostDone done) {
    if (handle) {
        const auto it = items_.find(handle.id);
        const Item* item = it == items_.end() ? nullptr : it->second.get();
        if (!item || item->snapshot || item->item_id == 0 || !session_up_) {
            return ConsumerPosts::refuse(done, post.post_id(), StatusCode::kNotFound,
                                         "the item is not open on the current connection "
                                         "(post on-stream once its refresh came, or by name)");
        }
        post.set_item_id(item->item_id);
    }
    if (!session_up_) {
        return ConsumerPosts::refuse(done, post.post_id(), StatusCode::kConnectionLost,
                                     "not connected to a server now");
    }
    if (!link_.send(proto::FrameType::kPost, post)) {
        return ConsumerPosts::refuse(done, post.post_id(), StatusCode::kLimitReached,
                                     "the connection's output queue is full");
    }
    counters_.posts_sent.fetch_add(1, std::memory_order_relaxed);
    posts_.sent(post.post_id(), std::move(done));
}

}  // namespace mdcast::sdk
