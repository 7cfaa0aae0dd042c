#include "proto/subscribe_split.h"

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>

#include "proto/limits.h"

namespace mdcast::proto {
namespace {

using google::protobuf::io::CodedOutputStream;
namespace wire = mdcast::wire::v1;

// A request_id field at its largest: tag (1 byte) and a 5-byte varint.
constexpr size_t kRequestIdBytes = 6;

size_t name_bytes(std::string_view name) {
    const auto length = static_cast<uint32_t>(name.size());
    return CodedOutputStream::VarintSize32(wire::Subscribe::kItemNamesFieldNumber << 3) +
           CodedOutputStream::VarintSize32(length) + name.size();
}

}  // namespace

RequestLimits request_limits(uint32_t announced_items, uint32_t announced_frame_bytes,
                             size_t default_items) {
    RequestLimits limits;
    limits.max_items = announced_items > 0 ? announced_items : std::max<size_t>(1, default_items);
    limits.max_body_bytes =
        announced_frame_bytes > 0 ? announced_frame_bytes : kDefaultServerFrameBodyBytes;
    return limits;
}

SubscribeSplit split_subscribe(const wire::Subscribe& head, std::span<const std::string_view> names,
                               const RequestLimits& limits) {
    wire::Subscribe empty = head;
    empty.clear_item_names();
    empty.clear_request_id();
    const size_t base = empty.ByteSizeLong() + kRequestIdBytes;
    const size_t max_items = std::max<size_t>(1, limits.max_items);
    SubscribeSplit split;
    wire::Subscribe* open = nullptr;
    size_t open_bytes = 0;
    for (size_t i = 0; i < names.size(); ++i) {
        const size_t bytes = name_bytes(names[i]);
        if (base + bytes > limits.max_body_bytes) {
            split.too_large.push_back(i);
            continue;
        }
        if (!open || open->item_names_size() >= static_cast<int>(max_items) ||
            open_bytes + bytes > limits.max_body_bytes) {
            open = &split.requests.emplace_back(empty);
            open_bytes = base;
        }
        open->add_item_names(std::string(names[i]));
        open_bytes += bytes;
    }
    return split;
}

}  // namespace mdcast::proto
