// Rendering field values as text and JSON (tools and logs).
#pragma once

#include <string>

#include "proto/field_dictionary.h"
#include "wire/common.pb.h"

namespace mdcast::proto {

namespace wire = mdcast::wire::v1;

// Renders a value as text: decimals exactly ("101.25"), times as ISO-8601 UTC.
std::string format_value(const wire::FieldValue& value);
// mantissa x 10^exponent exactly ("101.25"; exponent clamped to +-30).
std::string format_decimal(int64_t mantissa, int32_t exponent);

// JSON literal for the value: numbers bare, strings and times quoted, blank as null.
std::string format_value_json(const wire::FieldValue& value);

std::string json_escape(std::string_view text);

}  // namespace mdcast::proto
