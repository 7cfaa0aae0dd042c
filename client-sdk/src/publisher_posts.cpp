// The publisher's answer to posts (docs/sdk.md, "Posting"): each Post the
// distributor sends becomes one PublisherHandler::on_post call on the I/O
// thread, and its verdict one PostAck, sent at once. A handler that throws
// rejects the post (the poster is never left waiting for a timeout).
#include "guarded_call.h"
#include "post_fields.h"
#include "proto/post_checks.h"
#include "publisher_core.h"

namespace mdcast::sdk {

void PublisherCore::on_post(const proto::Frame& frame) {
    wire::v1::Post post;
    if (!post.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size())))
        return link_.abort("malformed Post body");
    counters_.posts_received.fetch_add(1, std::memory_order_relaxed);
    proto::FieldImage image;  // holds the string values `fields` point into
    std::vector<FieldValue> fields;
    from_wire_fields(post.fields(), image, fields);
    const auto found = by_item_id_.find(post.item_id());
    const PostRequest request{found == by_item_id_.end() ? PublishedItem{} : found->second->handle,
                              post.service_name(), post.item_name(), post.user(), fields};
    PostAnswer answer = PostAnswer::reject("the publisher failed to handle the post");
    guarded(*log_, "on_post", [&] { answer = handler_.on_post(request); });
    if (answer.accepted) counters_.posts_accepted.fetch_add(1, std::memory_order_relaxed);
    flush_updates();  // what was published before goes first
    link_.send(
        proto::FrameType::kPostAck,
        proto::make_post_ack(post.post_id(), answer.accepted, wire::v1::STATUS_NONE, answer.text));
}

}  // namespace mdcast::sdk
