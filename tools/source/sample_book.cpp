#include "sample_book.h"

#include <array>
#include <iterator>

#include "proto/book_codec.h"

namespace mdcast::tools {

namespace {

constexpr int64_t kFirstMidTicks = 10000;  // 100.00
constexpr int64_t kMidStepTicks = 100;     // book i: 100.00 + i

proto::MapEntryView price_key(int64_t ticks, proto::MapAction action) {
    proto::MapEntryView key;
    key.is_price = true;
    key.mantissa = ticks;
    key.exponent = kBookPriceExponent;
    key.action = action;
    return key;
}

proto::FieldEntry int_field(uint32_t id, int64_t value) {
    proto::FieldEntry field;
    field.id = id;
    field.kind = proto::FieldKind::kInt;
    field.integer = value;
    return field;
}

void append_add(std::string& out, int64_t price, const SampleLevel& level) {
    const std::array fields{int_field(kOrderSideField, level.side),
                            int_field(kOrderSizeField, level.size),
                            int_field(kNumOrdersField, level.orders)};
    proto::append_map_entry(out, price_key(price, proto::MapAction::kAdd), fields);
}

}  // namespace

SampleBook::SampleBook(uint64_t seed, uint64_t index, int64_t levels)
    : depth_(levels),
      mid_(kFirstMidTicks + kMidStepTicks * static_cast<int64_t>(index)),
      state_(seed ^ (index * 0x9E3779B97F4A7C15ULL)) {
    const int64_t bids = (levels + 1) / 2;
    for (int64_t k = 1; k <= bids; ++k) {
        levels_[mid_ - k] = SampleLevel{1, 100 * k, k};
    }
    for (int64_t k = 1; k <= levels - bids; ++k) {
        levels_[mid_ + k] = SampleLevel{2, 100 * k, k};
    }
}

// splitmix64: one state word, the same numbers on every platform (a test may
// replay it in another language).
uint64_t SampleBook::next_random() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void SampleBook::refresh_map(std::string& out) const {
    for (const auto& [price, level] : levels_) append_add(out, price, level);
}

void SampleBook::next_update(std::string& out) {
    const uint64_t actions = 1 + next_random() % 2;
    for (uint64_t i = 0; i < actions; ++i) draw_action(out);
}

std::map<int64_t, SampleLevel>::iterator SampleBook::random_level() {
    auto it = levels_.begin();
    std::advance(it, static_cast<long>(next_random() % levels_.size()));
    return it;
}

void SampleBook::draw_action(std::string& out) {
    const uint64_t choice = next_random() % 10;
    const auto count = static_cast<int64_t>(levels_.size());
    if (choice < 2 && count > depth_ / 2 && count > 1) {
        const auto it = random_level();
        proto::append_map_entry(out, price_key(it->first, proto::MapAction::kDelete), {});
        levels_.erase(it);
        return;
    }
    if (choice < 4 && count < depth_) {
        // A free slot among the 2 * depth around the mid: the drawn one or the next free after it.
        int64_t slot = static_cast<int64_t>(next_random() % static_cast<uint64_t>(2 * depth_));
        auto price_of = [&](int64_t s) {
            return s < depth_ ? mid_ - 1 - s : mid_ + 1 + s - depth_;
        };
        while (levels_.count(price_of(slot)) != 0) slot = (slot + 1) % (2 * depth_);
        return add_level(price_of(slot), out);
    }
    const auto it = random_level();
    it->second.size = 100 * static_cast<int64_t>(1 + next_random() % 50);
    it->second.orders = static_cast<int64_t>(1 + next_random() % 20);
    const std::array fields{int_field(kOrderSizeField, it->second.size),
                            int_field(kNumOrdersField, it->second.orders)};
    proto::append_map_entry(out, price_key(it->first, proto::MapAction::kUpdate), fields);
}

void SampleBook::add_level(int64_t price, std::string& out) {
    SampleLevel level;
    level.side = price < mid_ ? 1 : 2;
    level.size = 100 * static_cast<int64_t>(1 + next_random() % 50);
    level.orders = static_cast<int64_t>(1 + next_random() % 20);
    levels_[price] = level;
    append_add(out, price, level);
}

}  // namespace mdcast::tools
