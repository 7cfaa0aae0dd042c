#include "item_table.h"

namespace mdcast::tools {

SequenceOutcome check_sequence(ItemState& item, uint64_t seq, bool gaps_expected,
                               uint64_t& missing) {
    return check_sequence(item.last_seq, seq, gaps_expected, missing);
}

SequenceOutcome check_sequence(uint64_t& last_seq, uint64_t seq, bool gaps_expected,
                               uint64_t& missing) {
    missing = 0;
    if (seq <= last_seq) return SequenceOutcome::kDuplicate;
    const uint64_t expected = last_seq + 1;
    last_seq = seq;
    if (seq == expected || gaps_expected) return SequenceOutcome::kInOrder;
    missing = seq - expected;
    return SequenceOutcome::kGap;
}

ItemState& ItemTable::on_image(uint64_t item_id, const std::string& service,
                               const std::string& name, uint64_t seq) {
    ItemState& item = items_[item_id];
    item.service = service;
    item.name = name;
    item.last_seq = seq;
    return item;
}

ItemState* ItemTable::find(uint64_t item_id) {
    const auto found = items_.find(item_id);
    return found == items_.end() ? nullptr : &found->second;
}

}  // namespace mdcast::tools
