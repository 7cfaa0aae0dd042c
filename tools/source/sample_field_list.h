// The sample items' fields as the SDK's FieldList, for load sources built on
// the public Publisher API (mdcast-bench-publisher, mdcast-source --interactive).
//
// The values are those of tools/sample_items.h and the sizes those of
// UpdateEncoder, so an update built here matches, field for field, what
// mdcast-source's raw encoder sends for the same item and sequence.
#pragma once

#include <cstdint>
#include <string>

#include "mdcast/field_list.h"
#include "tools/sample_items.h"
#include "update_payload.h"
#include "wire/common.pb.h"

namespace mdcast::tools {

void add_sample_value(FieldList& fields, const SampleValue& value);

// Builds the update of item `index` at `seq` into `fields` (cleared first),
// padded like UpdateEncoder::encode to the encoder's body size. `item_id` is
// the id the distributor gave the item (its varint size counts in the body).
class SampleUpdateBuilder {
  public:
    explicit SampleUpdateBuilder(size_t body_bytes);
    void build(FieldList& fields, uint64_t item_id, uint64_t index, uint64_t seq,
               uint64_t publish_time_ns);
    const UpdateEncoder& encoder() const { return encoder_; }

  private:
    UpdateEncoder encoder_;
    std::string filler_;
};

// Appends a wire field list (a refresh's fields, a sample file's template) to an
// SDK FieldList, entry by entry and with the same types.
void append_wire_fields(FieldList& out, const wire::v1::FieldList& fields);

}  // namespace mdcast::tools
