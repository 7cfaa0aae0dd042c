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
    merged.merge(update);
    owed = true;
    return Admit::kHeld;
}

bool PacedSlot::take(std::string& out, uint64_t item_id, const std::vector<uint32_t>& view,
                     int64_t now_ns, const JsonEncoder* json) {
    if (!owed) return false;
    const proto::UpdateView update = owed_update(item_id);
    if (json) {
        json->append_update(out, update, view);
    } else {
        proto::append_update_frame(out, update, view.empty() ? nullptr : &view);
    }
    sent(now_ns);
    return true;
}

void PacedSlot::sent(int64_t now_ns) {
    clear_owed();
    quiet_from_ns = now_ns + int64_t{interval_ms} * 1'000'000;
}

void PacedSlot::on_image() {
    clear_owed();
}

void PacedSlot::clear_owed() {
    merged.clear();
    owed = false;
}

}  // namespace mdcast::server
