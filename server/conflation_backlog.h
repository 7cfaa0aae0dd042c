// What a slow consumer is owed while it conflates (output.slow_consumer_policy:
// conflate): its queue is full, so nothing more is queued for it; per item the
// backlog remembers what it must be sent once the queue drains.
//
// Quotes are merged: the drain sends the item's current values from the cache
// as one conflated update that says how many updates it stands for and over
// what time (MergedUpdate). A trade (Update.trade) is never merged away: its
// frame is held as it was to be sent, with the quotes merged before it, and
// the drain sends, per item and in order, those quotes (as they were then, one
// conflated update), then the trade, for every trade held, and last the item's
// current state (an update, image or status from the cache). So every trade
// reaches the client with its own values, and no value it sees is older than
// one it has seen. Trades held are bounded by the owner (output.max_held_trades);
// everything else is one entry per subscribed item.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "proto/update_codec.h"
#include "server/merged_update.h"

namespace mdcast::server {

class ConflationBacklog {
  public:
    // What an item's current state is owed as, by weight (the heaviest wins).
    enum class Owed : uint8_t { kUpdate, kStatus, kImage };

    // One frame the drain asks for, oldest first within an item.
    struct Piece {
        enum class Kind : uint8_t {
            kQuotes,  // `quotes`: the quotes merged before a trade, as they were
            kTrade,   // `trade_frame`: the trade, as it was to be sent
            kState,   // the item's current state, owed as `state`; `quotes`: merged since
                      // the last trade (their count and span; the values come from the cache)
        };
        Kind kind;
        Owed state = Owed::kUpdate;
        const MergedUpdate* quotes = nullptr;
        std::string_view trade_frame;
    };

    // The item's current state is owed as `kind` (at least).
    void owe(uint64_t item_id, Owed kind);
    // A quote (an update that is not a trade) for the item: merged.
    void owe_update(uint64_t item_id, const proto::UpdateView& update);
    // A trade for the item: held with the quotes merged before it.
    void hold_trade(uint64_t item_id, std::span<const uint8_t> frame);

    // Hands the pieces to `send`, item by item in item order from where the
    // last drain stopped (round robin), each item's in order; `send` returns
    // false to stop there (that piece and the rest stay for the next drain).
    // True once everything was sent (the backlog is empty).
    using Send = std::function<bool(uint64_t item_id, const Piece& piece)>;
    bool drain(const Send& send);
    void clear();

    bool empty() const { return items_.empty(); }
    size_t held_trades() const { return held_trades_; }
    size_t held_trade_bytes() const { return held_trade_bytes_; }

  private:
    struct HeldTrade {
        MergedUpdate quotes_before;
        std::string frame;
    };
    struct ItemOwed {
        std::deque<HeldTrade> trades;
        std::optional<Owed> state;  // none: only trades are owed
        MergedUpdate quotes;        // since the last trade
    };
    bool drain_item(uint64_t item_id, ItemOwed& owed, const Send& send);
    uint64_t resume_at_ = 0;  // the item the last drain stopped at
    void drop_trade(ItemOwed& owed);

    std::map<uint64_t, ItemOwed> items_;
    size_t held_trades_ = 0;
    size_t held_trade_bytes_ = 0;
};

}  // namespace mdcast::server
