#include "server/merged_update.h"

#include <algorithm>

namespace mdcast::server {

void MergedUpdate::merge(const proto::UpdateView& update) {
    fields.apply(update.fields);
    if (empty()) {
        first_publish_time_ns = update.conflated && update.first_publish_time_ns != 0
                                    ? update.first_publish_time_ns
                                    : update.publish_time_ns;
    }
    item_seq = update.item_seq;
    publish_time_ns = update.publish_time_ns;
    stands_for += update.conflated ? std::max<uint32_t>(update.stands_for, 1) : 1;
}

proto::UpdateView MergedUpdate::to_update(uint64_t item_id) const {
    proto::UpdateView update;
    update.item_id = item_id;
    update.item_seq = item_seq;
    update.publish_time_ns = publish_time_ns;
    update.conflated = true;
    update.stands_for = stands_for;
    update.first_publish_time_ns = first_publish_time_ns;
    update.fields.reserve(fields.size());
    for (const auto& slot : fields.slots()) update.fields.push_back(slot.entry());
    return update;
}

void MergedUpdate::clear() {
    fields.clear();
    item_seq = 0;
    publish_time_ns = 0;
    first_publish_time_ns = 0;
    stands_for = 0;
}

}  // namespace mdcast::server
