// Field lists of posts between the public FieldValue and the wire FieldList,
// both ways, through proto::FieldImage (the one place that writes and reads
// wire field values). Posts are rare next to updates: clarity over speed.
#pragma once

#include <span>
#include <vector>

#include "mdcast/types.h"
#include "proto/field_image.h"
#include "wire/common.pb.h"

namespace mdcast::sdk {

// A later field with the same id replaces an earlier one.
void to_wire_fields(std::span<const FieldValue> fields, wire::v1::FieldList& out);
// `image` keeps the string values `out` points into.
void from_wire_fields(const wire::v1::FieldList& in, proto::FieldImage& image,
                      std::vector<FieldValue>& out);

}  // namespace mdcast::sdk
