#include "server/interval_conflation.h"

#include "server/websocket/json_protocol.h"

namespace mdcast::server {

PacedSlot::Admit PacedSlot::admit(const proto::UpdateView& update, int64_t now_ns) {
    if (!owed && now_ns >= quiet_from_ns) {
        quiet_from_ns = now_ns + int64_t{interval_ms} * 1'000'000;
        return Admit::kSend;
    }
    // A trade within the interval does not restart it: the quotes keep their pace.
    if (update.trade) return owed ? Admit::kAfterOwed : Admit::kSend;
    fields.apply(update.fields);
    if (!owed) first_publish_time_ns = update.publish_time_ns;
    item_seq = update.item_seq;
    publish_time_ns = update.publish_time_ns;
    ++stands_for;
    owed = true;
    return Admit::kHeld;
}

bool PacedSlot::take(std::string& out, uint64_t item_id, const std::vector<uint32_t>& view,
                     int64_t now_ns, const JsonEncoder* json) {
    if (!owed) return false;
    proto::UpdateView update;
    update.item_id = item_id;
    update.item_seq = item_seq;
    update.publish_time_ns = publish_time_ns;
    update.conflated = true;
    update.stands_for = stands_for;
    update.first_publish_time_ns = first_publish_time_ns;
    for (const auto& slot : fields.slots()) update.fields.push_back(slot.entry());
    if (json) {
        json->append_update(out, update, view);
    } else {
        proto::append_update_frame(out, update, view.empty() ? nullptr : &view);
    }
    clear_owed();
    quiet_from_ns = now_ns + int64_t{interval_ms} * 1'000'000;
    return true;
}

void PacedSlot::on_image() {
    clear_owed();
}

void PacedSlot::clear_owed() {
    fields.clear();
    owed = false;
    stands_for = 0;
    first_publish_time_ns = 0;
}

}  // namespace mdcast::server
