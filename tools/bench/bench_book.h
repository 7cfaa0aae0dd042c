// The books mdcast-bench-publisher publishes with --book-levels MIN:MAX
// (`mdcast-bench books`): item i's MarketByPrice book holds a fixed number of
// price levels between MIN and MAX (spread over the items), a window of
// consecutive prices. Each update changes 1 to 3 levels, in turn: one level's
// size updated; the lowest level deleted and a new one added above the top;
// both. The window slides, so a book keeps its depth and every action is one
// a real book has (kUpdate, kDelete, kAdd).
#pragma once

#include <cstdint>
#include <vector>

#include "mdcast/book.h"

namespace mdcast::tools {

class BenchBook {
  public:
    // One book per item index 0..items-1; 1 <= min_levels <= max_levels.
    BenchBook(uint64_t items, uint32_t min_levels, uint32_t max_levels);

    uint32_t levels(uint64_t index) const;
    // Every level of the item's book as it stands (its image).
    void image(uint64_t index, BookChanges& entries);
    // The actions of update `seq` (1, 2, ...) of the item, applied to the
    // window: 1 + seq % 3 of them.
    void update(uint64_t index, uint64_t seq, BookChanges& changes);

  private:
    BookKey price(uint64_t index, uint64_t level) const;
    const FieldList& level_fields(uint64_t seq, uint64_t level);

    uint32_t min_levels_;
    uint32_t max_levels_;
    std::vector<uint64_t> lowest_;  // per item: the offset of its lowest level
    FieldList fields_;              // scratch: one level's fields
};

}  // namespace mdcast::tools
