// The distributor's frame limit as the publisher applies it (docs/sdk.md,
// "Frame limit"): the largest frame body the distributor takes, as its
// LoginResponse announces it (publishers.max_frame_bytes), and the bounds of
// the frames the publisher would send, known before the item's id and
// sequence are. A frame over the limit makes the distributor close the
// connection frame_too_large; a kept image over it would be sent again after
// every reconnect, so the publisher refuses it at the call (PublisherOutbox)
// or drops the item on the I/O thread (PublisherCore::drop_oversize, defined
// in publisher_frame_limit.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "proto/limits.h"
#include "proto/update_codec.h"

namespace mdcast::sdk {

// The limit before any distributor announced one, and from one that
// announces none: publishers.max_frame_bytes' default.
inline constexpr uint32_t kDefaultDistributorFrameBytes = proto::kDefaultFrameBodyBytes;

// A LoginResponse's max_frame_bytes as the limit to apply (0: the default).
constexpr uint32_t announced_frame_limit(uint32_t announced) {
    return announced != 0 ? announced : kDefaultDistributorFrameBytes;
}

// Upper bounds of frame bodies (item id and sequence at their widest): a
// refresh with these fields, status text and book Map; an update whose body
// without item id and sequence (proto::append_update_rest) is `rest_bytes`;
// an item status with this text.
size_t refresh_body_bound(std::span<const proto::FieldEntry> fields, size_t text_bytes,
                          size_t map_bytes);
size_t update_body_bound(size_t rest_bytes);
size_t status_body_bound(size_t text_bytes);

// "book refresh of 1200345 bytes is over the distributor's frame limit of
// 1048576 bytes (publishers.max_frame_bytes)": the words of every refusal.
std::string frame_over_limit(std::string_view what, size_t bytes, uint32_t limit);

}  // namespace mdcast::sdk
