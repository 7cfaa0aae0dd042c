// The items one client connection has open, and the per-item sequence check.
//
// A refresh sets an item's base sequence; each update must carry base + 1,
// + 2, ... An update that skips ahead is a gap (the skipped numbers are
// missing); one at or below the last seen is a duplicate. With a view the
// server drops updates that touch none of the view's fields, so there a skip
// is expected and only duplicates are counted.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

namespace mdcast::tools {

struct ItemState {
    std::string service;
    std::string name;
    uint64_t last_seq = 0;
};

enum class SequenceOutcome { kInOrder, kGap, kDuplicate };

// Checks `seq` against the item's last sequence and advances it. `missing` is
// set to the number of skipped sequence numbers for a gap, else 0.
SequenceOutcome check_sequence(ItemState& item, uint64_t seq, bool gaps_expected,
                               uint64_t& missing);
// The same on an item's last sequence alone, for a client that keeps it apart
// from the names (the bench consumer: a small array the update path touches).
SequenceOutcome check_sequence(uint64_t& last_seq, uint64_t seq, bool gaps_expected,
                               uint64_t& missing);

class ItemTable {
  public:
    // An image: (re)sets the item's names and base sequence.
    ItemState& on_image(uint64_t item_id, const std::string& service, const std::string& name,
                        uint64_t seq);
    ItemState* find(uint64_t item_id);
    void erase(uint64_t item_id) { items_.erase(item_id); }
    size_t size() const { return items_.size(); }

  private:
    std::unordered_map<uint64_t, ItemState> items_;
};

}  // namespace mdcast::tools
