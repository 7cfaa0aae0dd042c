// Checks on a wire Post before it goes anywhere, the same at every hop (the
// server when a client sends it, the distributor when a server forwards it):
// which stream it is for, and whether it stays within the protocol's limits.
// A post that fails is answered with a PostAck refusing it, never forwarded.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "wire/post.pb.h"

namespace mdcast::proto {

enum class PostTarget : uint8_t {
    kOnStream,   // item_id names an item the sender has open
    kOffStream,  // service_name and item_name name the item
    kInvalid,
};

struct PostCheck {
    PostTarget target = PostTarget::kInvalid;
    std::string_view error;  // empty when the post is valid
};

// Exactly one of item_id or (service_name, item_name) set, names within
// proto/limits.h, at least one and at most kMaxPostFields fields.
PostCheck check_post(const ::mdcast::wire::v1::Post& post);

// A PostAck for `post_id`: accepted (code NONE, no text) or refused with
// `code` and `text`, the text cut to kMaxPostAckTextBytes at a UTF-8 boundary.
::mdcast::wire::v1::PostAck make_post_ack(uint64_t post_id, bool accepted,
                                          ::mdcast::wire::v1::StatusCode code,
                                          std::string_view text);

// The user a publisher is shown for a post: the login that sent it, and when
// that login relays for others (an edge server, server/cascade/) the user it
// says it relays for, as "login/relayed" ("edge1/alice"). The login part is
// always the authenticated one, so a client can add to its name but never
// pass for another user; a relayed part that is too long or has control
// characters is dropped.
std::string posting_user(std::string_view login, std::string_view relayed);

}  // namespace mdcast::proto
