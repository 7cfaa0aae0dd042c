#include "item_sequencer.h"

namespace mdcast::sdk {

void ItemSequencer::deliver_base(uint64_t seq) {
    has_base_ = true;
    awaiting_image_ = false;
    holding_ = false;
    last_ = seq;
}

ItemSequencer::Verdict ItemSequencer::on_refresh(uint64_t seq, int64_t now_ns) {
    if (awaiting_image_ && has_base_ && seq < last_) {
        if (!holding_) hold_since_ns_ = now_ns;
        holding_ = true;
        held_seq_ = seq;
        return Verdict::kHold;
    }
    deliver_base(seq);
    return Verdict::kDeliver;
}

// An update while a held image catches up: merged into it, or it is released.
ItemSequencer::Verdict ItemSequencer::on_update_holding(uint64_t seq) {
    if (seq <= held_seq_) return Verdict::kDrop;
    held_seq_ = seq;
    if (seq < last_) return Verdict::kHold;
    deliver_base(seq);
    return Verdict::kRelease;
}

void ItemSequencer::on_connection_lost() {
    awaiting_image_ = true;
    holding_ = false;
}

void ItemSequencer::on_source_reset() {
    has_base_ = false;
    holding_ = false;
    awaiting_image_ = false;
}

bool ItemSequencer::hold_expired(int64_t now_ns, int64_t timeout_ns) {
    if (!holding_ || now_ns - hold_since_ns_ < timeout_ns) return false;
    deliver_base(held_seq_);
    return true;
}

}  // namespace mdcast::sdk
