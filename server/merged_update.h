// Updates of one item merged into one (conflation): a field's latest value
// wins, and the result says how many updates it stands for and over what time
// (the first merged update's stamp and the last's), so a subscriber can count
// what it was spared. Used by per-request conflation (interval_conflation.h)
// and by the slow-consumer backlog (conflation_backlog.h).
#pragma once

#include <cstdint>

#include "proto/field_image.h"
#include "proto/update_codec.h"

namespace mdcast::server {

struct MergedUpdate {
    proto::FieldImage fields;            // the fields merged, latest values
    uint64_t item_seq = 0;               // of the last update merged
    uint64_t publish_time_ns = 0;        // its stamp
    uint64_t first_publish_time_ns = 0;  // the stamp of the first update merged
    uint32_t stands_for = 0;             // updates merged

    bool empty() const { return stands_for == 0; }
    // Merges `update`; one that is itself conflated counts as all it stands for
    // and brings its own first stamp.
    void merge(const proto::UpdateView& update);
    // The merged update, marked conflated. Its string fields point into
    // `fields`: valid until this changes.
    proto::UpdateView to_update(uint64_t item_id) const;
    void clear();
};

}  // namespace mdcast::server
