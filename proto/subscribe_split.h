// Splitting one subscription request into Subscribe messages the server
// accepts: each with at most the names and at most the body bytes the server
// announced in its LoginResponse (max_items_per_request, max_frame_bytes). A
// request larger than either would be closed with protocol_error or
// frame_too_large, and a client that re-sends its subscriptions after every
// reconnect would then be closed again for ever.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "wire/client.pb.h"

namespace mdcast::proto {

struct RequestLimits {
    size_t max_items = 1;       // names in one Subscribe, at least 1
    size_t max_body_bytes = 0;  // encoded Subscribe bytes (the frame body)
};

// The limits a LoginResponse announces (its max_items_per_request and
// max_frame_bytes); one it leaves out (0: an older server) is `default_items`
// names or kDefaultServerFrameBodyBytes.
RequestLimits request_limits(uint32_t announced_items, uint32_t announced_frame_bytes,
                             size_t default_items);

struct SubscribeSplit {
    std::vector<wire::v1::Subscribe> requests;
    std::vector<size_t> too_large;  // indices into `names` that fit no request, even alone
};

// `head` carries what every piece repeats (service, snapshot, view,
// conflate_ms; its item_names are ignored). Room is kept for a request_id set
// on each piece afterwards. The names keep their order across the pieces.
SubscribeSplit split_subscribe(const wire::v1::Subscribe& head,
                               std::span<const std::string_view> names,
                               const RequestLimits& limits);

}  // namespace mdcast::proto
