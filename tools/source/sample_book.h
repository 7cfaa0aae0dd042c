// The MarketByPrice books mdcast-source publishes with --books (docs/books.md,
// "Tools"): a deterministic stream of adds, updates and deletes around a mid
// price, so a test can check a subscriber's book against the publisher's.
//
// Book i has its mid at 100.00 + i (prices in ticks of 0.01, exponent -2). Its
// price slots are the `levels` ticks below the mid (bids, ORDER_SIDE 1) and the
// `levels` above it (asks, ORDER_SIDE 2); the refresh fills the levels nearest
// the mid, half on each side (an odd one on the bid side). Each update then
// carries one or two actions drawn from a generator seeded by (seed, i):
//   delete a level (2 in 10, while more than levels/2 are left),
//   add a level at a free slot (2 in 10, while fewer than `levels` are there),
//   otherwise change a level's ORDER_SIZE and NO_ORD.
// An add carries ORDER_SIDE, ORDER_SIZE (100 to 5,000) and NO_ORD (1 to 20).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace mdcast::tools {

constexpr uint32_t kDisplayNameField = 3;   // DSPLY_NAME: the book's summary
constexpr uint32_t kOrderSideField = 3428;  // RDM ORDER_SIDE: 1 bid, 2 ask
constexpr uint32_t kOrderSizeField = 3429;  // RDM ORDER_SIZE
constexpr uint32_t kNumOrdersField = 3430;  // RDM NO_ORD
constexpr int32_t kBookPriceExponent = -2;

struct SampleLevel {
    int64_t side = 0;
    int64_t size = 0;
    int64_t orders = 0;
};

class SampleBook {
  public:
    SampleBook(uint64_t seed, uint64_t index, int64_t levels);

    // Every level as a MAP_ADD in price order: the refresh's encoded Map
    // (appended to `out`).
    void refresh_map(std::string& out) const;
    // Draws the next update's actions, applies them to levels() and appends
    // their encoded Map to `out`. (A source that cannot send it stops, exit 1.)
    void next_update(std::string& out);

    // Price in ticks (mantissa at kBookPriceExponent) -> level.
    const std::map<int64_t, SampleLevel>& levels() const { return levels_; }
    int64_t mid_ticks() const { return mid_; }

  private:
    uint64_t next_random();
    void draw_action(std::string& out);
    void add_level(int64_t price, std::string& out);
    std::map<int64_t, SampleLevel>::iterator random_level();

    int64_t depth_;  // the most levels; the refresh has this many
    int64_t mid_;
    uint64_t state_;
    std::map<int64_t, SampleLevel> levels_;
};

}  // namespace mdcast::tools
