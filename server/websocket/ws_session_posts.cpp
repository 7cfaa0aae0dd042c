// LSEG's Post domain on a WebSocket session (docs/websocket.md, "Post (contributions)"): a
// post is checked for what only JSON can get wrong, sent on the server's post
// path, and answered with an Ack carrying LSEG's NakCode when refused.
#include "server/client_session.h"
#include "server/websocket/json_post.h"
#include "server/websocket/ws_session.h"

namespace mdcast::server {

namespace {

// LSEG's NakCode for a refused post.
std::string_view nak_code_for(const wire::PostAck& ack) {
    switch (ack.code()) {
        case wire::STATUS_NOT_ENTITLED:
            return "AccessDenied";
        case wire::STATUS_NOT_FOUND:
            return "SourceUnknown";
        case wire::STATUS_LIMIT_REACHED:
            return "NoResources";
        case wire::STATUS_INVALID_REQUEST:
            return "InvalidContent";
        case wire::STATUS_SOURCE_DOWN:
            return "SourceDown";
        default:  // the publisher's own refusal, or no answer in time
            return ack.text().starts_with("timeout") ? "NoResponse" : "DeniedBySrc";
    }
}

constexpr size_t kMaxPendingPosts = 10000;

}  // namespace

// LSEG's Post, on an open item's stream or off-stream with a Key: checked here for
// what only JSON can get wrong (the stream, the fields), then the server's post path.
void WsSession::on_post(const JsonRequest& request) {
    wire::Post post;
    const bool off_stream = !request.names.empty();
    if (off_stream) {
        const std::string& service =
            request.service.empty() ? settings_.default_service : request.service;
        if (service.empty())
            return answer_post(request, "InvalidContent",
                               "Key.Service missing (no clients.ws_default_service set)");
        post.set_service_name(service);
        post.set_item_name(request.names[0]);
    } else {
        const uint64_t item_id = streams_.item_of(request.id);
        if (item_id == 0)
            return answer_post(request, "NotOpen",
                               "no item open on ID " + std::to_string(request.id));
        post.set_item_id(item_id);
    }
    std::string why;
    auto fields = post_field_list(request.post_fields, encoder().dictionary(), why);
    if (!fields) return answer_post(request, "InvalidContent", why);
    if (posts_.size() >= kMaxPendingPosts)
        return answer_post(request, "NoResources", "too many posts awaiting an answer");
    const uint64_t id = next_post_id_++;
    posts_[id] = PendingPost{request.id, request.post_id, request.ack,
                             off_stream ? post.service_name() : std::string(),
                             off_stream ? post.item_name() : std::string()};
    post.set_post_id(id);
    *post.mutable_fields() = std::move(*fields);
    client_.request_post(post);
}

void WsSession::answer_post(const JsonRequest& request, std::string_view nak_code,
                            const std::string& text) {
    if (!request.ack) return;
    const bool off_stream = !request.names.empty();
    send(JsonEncoder::post_ack(request.id, request.post_id, nak_code, text,
                               off_stream ? &request.service : nullptr,
                               off_stream ? &request.names[0] : nullptr));
}

void WsSession::on_post_ack(const wire::PostAck& ack) {
    const auto it = posts_.find(ack.post_id());
    if (it == posts_.end()) return;
    const PendingPost post = std::move(it->second);
    posts_.erase(it);
    if (!post.ack) return;
    const bool off_stream = !post.name.empty();
    send(JsonEncoder::post_ack(post.stream, post.client_id, ack.accepted() ? "" : nak_code_for(ack),
                               ack.text(), off_stream ? &post.service : nullptr,
                               off_stream ? &post.name : nullptr));
}

}  // namespace mdcast::server
