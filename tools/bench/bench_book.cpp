#include "bench_book.h"

namespace mdcast::tools {

namespace {

// RDM ids of a MarketByPrice level (docs/books.md): ORDER_SIZE and NO_ORD.
constexpr uint32_t kOrderSize = 3429;
constexpr uint32_t kOrderCount = 3430;
constexpr int64_t kFirstPrice = 10000;  // 100.00: prices in hundredths
constexpr int32_t kPriceExponent = -2;
constexpr int64_t kItemPriceSpacing = 100000;  // items' windows never meet

}  // namespace

BenchBook::BenchBook(uint64_t items, uint32_t min_levels, uint32_t max_levels)
    : min_levels_(min_levels), max_levels_(max_levels), lowest_(items, 0) {}

uint32_t BenchBook::levels(uint64_t index) const {
    return min_levels_ + static_cast<uint32_t>(index % (max_levels_ - min_levels_ + 1));
}

BookKey BenchBook::price(uint64_t index, uint64_t level) const {
    const auto offset = static_cast<int64_t>(index) * kItemPriceSpacing;
    return BookKey::price(kFirstPrice + offset + static_cast<int64_t>(level), kPriceExponent);
}

const FieldList& BenchBook::level_fields(uint64_t seq, uint64_t level) {
    fields_.clear();
    fields_.add_int(kOrderSize, static_cast<int64_t>(100 + (seq * 13 + level) % 900));
    fields_.add_int(kOrderCount, static_cast<int64_t>(1 + (seq + level) % 9));
    return fields_;
}

void BenchBook::image(uint64_t index, BookChanges& entries) {
    entries.clear();
    const uint64_t low = lowest_[index];
    for (uint64_t level = low; level < low + levels(index); ++level) {
        entries.add(price(index, level), level_fields(0, level));
    }
}

void BenchBook::update(uint64_t index, uint64_t seq, BookChanges& changes) {
    changes.clear();
    const uint64_t depth = levels(index);
    uint64_t& low = lowest_[index];
    const uint64_t kind = seq % 3;  // 0: update; 1: slide; 2: both
    if (kind != 1) {
        const uint64_t level = low + (seq * 7) % depth;
        changes.update(price(index, level), level_fields(seq, level));
    }
    if (kind != 0) {
        changes.remove(price(index, low));
        changes.add(price(index, low + depth), level_fields(seq, low + depth));
        ++low;
    }
}

}  // namespace mdcast::tools
