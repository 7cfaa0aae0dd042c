// Helpers for field lists: merging an update into an image, rendering values.
#pragma once

#include <string>

#include "proto/field_dictionary.h"
#include "wire/common.pb.h"

namespace mdcast::proto {

namespace wire = mdcast::wire::v1;

// Applies `update` to `image`: fields present in the update replace the image's
// value for that id; new ids are appended. Keeps the image's field order.
void merge_fields(wire::FieldList& image, const wire::FieldList& update);

// Copies into `out` only the fields of `in` whose ids are in the sorted `view`.
void filter_fields(const wire::FieldList& in, const std::vector<uint32_t>& sorted_view,
                   wire::FieldList& out);

// Renders a value as text: decimals exactly ("101.25"), times as ISO-8601 UTC.
std::string format_value(const wire::FieldValue& value);

// JSON literal for the value: numbers bare, strings and times quoted, blank as null.
std::string format_value_json(const wire::FieldValue& value);

std::string json_escape(std::string_view text);

}  // namespace mdcast::proto
