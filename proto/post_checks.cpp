#include "proto/post_checks.h"

#include <algorithm>

#include "proto/limits.h"

namespace mdcast::proto {

namespace {

PostCheck invalid(std::string_view error) {
    return {PostTarget::kInvalid, error};
}

// Cuts `text` to at most `max` bytes without splitting a UTF-8 sequence, so the
// receiver's protobuf parser never sees a broken string.
std::string_view cut_utf8(std::string_view text, size_t max) {
    if (text.size() <= max) return text;
    size_t end = max;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    return text.substr(0, end);
}

}  // namespace

PostCheck check_post(const ::mdcast::wire::v1::Post& post) {
    const bool named = !post.service_name().empty() || !post.item_name().empty();
    if (post.item_id() != 0 && named) return invalid("post names both an item id and a name");
    if (post.fields().fields_size() == 0) return invalid("post carries no fields");
    if (static_cast<size_t>(post.fields().fields_size()) > kMaxPostFields)
        return invalid("post carries too many fields");
    if (post.item_id() != 0) return {PostTarget::kOnStream, {}};
    if (!valid_service_name(post.service_name())) return invalid("post service name invalid");
    if (!valid_item_name(post.item_name())) return invalid("post item name invalid");
    return {PostTarget::kOffStream, {}};
}

::mdcast::wire::v1::PostAck make_post_ack(uint64_t post_id, bool accepted,
                                          ::mdcast::wire::v1::StatusCode code,
                                          std::string_view text) {
    ::mdcast::wire::v1::PostAck ack;
    ack.set_post_id(post_id);
    ack.set_accepted(accepted);
    if (accepted) return ack;
    ack.set_code(code);
    ack.set_text(std::string(cut_utf8(text, kMaxPostAckTextBytes)));
    return ack;
}

std::string posting_user(std::string_view login, std::string_view relayed) {
    const bool printable = std::all_of(relayed.begin(), relayed.end(), [](char c) {
        return static_cast<unsigned char>(c) >= 0x20 && c != 0x7f;
    });
    if (relayed.empty() || relayed.size() > kMaxUserNameBytes || !printable)
        return std::string(login);
    return std::string(login) + "/" + std::string(relayed);
}

}  // namespace mdcast::proto
