// What a client's subscribe request may carry: the protocol's limits
// (proto/limits.h, the same the distributor registers names with) and
// clients.max_items_per_request. Each check returns the closed status the
// request is refused with, or nullopt when it may go ahead.
#pragma once

#include <optional>
#include <string>

#include "proto/limits.h"
#include "server/make_status.h"
#include "wire/client.pb.h"

namespace mdcast::server {

namespace v1 = mdcast::wire::v1;

inline std::optional<v1::Status> check_subscribe(const v1::Subscribe& request,
                                                 uint32_t max_items_per_request) {
    if (!proto::valid_service_name(request.service_name()) ||
        request.view_field_ids_size() > static_cast<int>(proto::kMaxViewFields)) {
        return make_status(v1::STREAM_CLOSED, v1::DATA_SUSPECT, v1::STATUS_INVALID_REQUEST,
                           "service name missing or too long, or view too large");
    }
    if (request.conflate_ms() > proto::kMaxConflateMs) {
        return make_status(v1::STREAM_CLOSED, v1::DATA_SUSPECT, v1::STATUS_INVALID_REQUEST,
                           "conflate_ms " + std::to_string(request.conflate_ms()) +
                               " is above the limit of " + std::to_string(proto::kMaxConflateMs));
    }
    if (request.item_names_size() > static_cast<int>(max_items_per_request)) {
        return make_status(v1::STREAM_CLOSED, v1::DATA_SUSPECT, v1::STATUS_LIMIT_REACHED,
                           "more than clients.max_items_per_request (" +
                               std::to_string(max_items_per_request) + ") items in one request");
    }
    return std::nullopt;
}

inline std::optional<v1::Status> check_item_name(const std::string& name) {
    if (proto::valid_item_name(name)) return std::nullopt;
    return make_status(v1::STREAM_CLOSED, v1::DATA_SUSPECT, v1::STATUS_INVALID_REQUEST,
                       "item name missing or too long");
}

}  // namespace mdcast::server
