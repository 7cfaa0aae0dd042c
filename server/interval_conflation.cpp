#include "server/interval_conflation.h"

namespace mdcast::server {

bool PacedSlot::admit(const proto::UpdateView& update, int64_t now_ns) {
    if (!owed && now_ns >= quiet_from_ns) {
        quiet_from_ns = now_ns + int64_t{interval_ms} * 1'000'000;
        return true;
    }
    fields.apply(update.fields);
    item_seq = update.item_seq;
    publish_time_ns = update.publish_time_ns;
    owed = true;
    return false;
}

bool PacedSlot::take(std::string& out, uint64_t item_id, const std::vector<uint32_t>& view,
                     int64_t now_ns) {
    if (!owed) return false;
    proto::UpdateView update;
    update.item_id = item_id;
    update.item_seq = item_seq;
    update.publish_time_ns = publish_time_ns;
    update.conflated = true;
    for (const auto& slot : fields.slots()) update.fields.push_back(slot.entry());
    proto::append_update_frame(out, update, view.empty() ? nullptr : &view);
    fields.clear();
    owed = false;
    quiet_from_ns = now_ns + int64_t{interval_ms} * 1'000'000;
    return true;
}

void PacedSlot::on_image() {
    fields.clear();
    owed = false;
}

}  // namespace mdcast::server
