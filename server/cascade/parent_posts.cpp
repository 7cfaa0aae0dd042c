#include "server/cascade/parent_posts.h"

#include "proto/post_checks.h"

namespace mdcast::server {

namespace wire = ::mdcast::wire::v1;

bool ParentPosts::start(uint64_t post_id, uint16_t source) {
    if (in_flight_.size() >= kMaxInFlight) return false;
    return in_flight_.emplace(post_id, source).second;
}

std::optional<ParentPosts::Answer> ParentPosts::answer(const wire::PostAck& ack) {
    const auto found = in_flight_.find(ack.post_id());
    if (found == in_flight_.end()) {
        ++unknown_answers_;
        return std::nullopt;
    }
    Answer answer{found->second, ack};
    in_flight_.erase(found);
    return answer;
}

std::vector<ParentPosts::Answer> ParentPosts::link_lost(const std::string& why) {
    std::vector<Answer> refused;
    refused.reserve(in_flight_.size());
    for (const auto& [post_id, source] : in_flight_) {
        refused.emplace_back(source,
                             proto::make_post_ack(post_id, false, wire::STATUS_SOURCE_DOWN, why));
    }
    in_flight_.clear();
    return refused;
}

}  // namespace mdcast::server
