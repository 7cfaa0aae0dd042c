// A WebSocket Post's Message.Fields as the native protocol's FieldList: each
// field named (or numbered) by the dictionary and its JSON value converted to
// the dictionary's type. Decimals are taken from the JSON number at 15
// significant digits (45.55 is 4555e-2); times as ISO-8601 UTC text or
// nanoseconds since the epoch; null is a blank.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "proto/field_dictionary.h"
#include "server/websocket/json_requests.h"
#include "wire/common.pb.h"

namespace mdcast::server {

// nullopt, with `why` set, when a field is unknown or its value does not fit its type.
std::optional<::mdcast::wire::v1::FieldList> post_field_list(
    const std::vector<std::pair<std::string, JsonScalar>>& fields,
    const proto::FieldDictionary& dictionary, std::string& why);

}  // namespace mdcast::server
