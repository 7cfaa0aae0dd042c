#include "server/conflation_backlog.h"

namespace mdcast::server {

void ConflationBacklog::owe(uint64_t item_id, Owed kind) {
    ItemOwed& owed = items_[item_id];
    if (!owed.state || kind > *owed.state) owed.state = kind;
}

void ConflationBacklog::owe_update(uint64_t item_id, const proto::UpdateView& update) {
    ItemOwed& owed = items_[item_id];
    owed.quotes.merge(update);
    if (!owed.state) owed.state = Owed::kUpdate;
}

// The quotes merged so far go before the trade; an image or status owed stays
// owed (it is sent from the cache after the trades, being newer than them).
void ConflationBacklog::hold_trade(uint64_t item_id, std::span<const uint8_t> frame) {
    ItemOwed& owed = items_[item_id];
    HeldTrade& held = owed.trades.emplace_back();
    held.quotes_before = std::move(owed.quotes);
    owed.quotes.clear();
    held.frame.assign(reinterpret_cast<const char*>(frame.data()), frame.size());
    // The quotes went with the trade; a quote owed without its values stays owed.
    if (owed.state == Owed::kUpdate && !held.quotes_before.empty()) owed.state.reset();
    ++held_trades_;
    held_trade_bytes_ += held.frame.size();
}

// Resumes at the item where the last drain stopped, wrapping round: when the
// queue takes a few items per drain (a slow link's small bound), the first
// items, owed again by the next drain, must not starve the others.
bool ConflationBacklog::drain(const Send& send) {
    auto it = items_.lower_bound(resume_at_);
    while (!items_.empty()) {
        if (it == items_.end()) it = items_.begin();
        if (!drain_item(it->first, it->second, send)) {
            resume_at_ = it->first;
            return false;
        }
        it = items_.erase(it);
    }
    resume_at_ = 0;
    return true;
}

// The item's held trades in order (each after the quotes before it), then its
// state. Each piece is forgotten once sent, so a stop resumes where it was.
bool ConflationBacklog::drain_item(uint64_t item_id, ItemOwed& owed, const Send& send) {
    while (!owed.trades.empty()) {
        HeldTrade& held = owed.trades.front();
        if (!held.quotes_before.empty()) {
            if (!send(item_id, Piece{Piece::Kind::kQuotes, Owed::kUpdate, &held.quotes_before, {}}))
                return false;
            held.quotes_before.clear();
        }
        if (!send(item_id, Piece{Piece::Kind::kTrade, Owed::kUpdate, nullptr, held.frame}))
            return false;
        drop_trade(owed);
    }
    if (owed.state && !send(item_id, Piece{Piece::Kind::kState, *owed.state, &owed.quotes, {}}))
        return false;
    return true;
}

void ConflationBacklog::drop_trade(ItemOwed& owed) {
    --held_trades_;
    held_trade_bytes_ -= owed.trades.front().frame.size();
    owed.trades.pop_front();
}

void ConflationBacklog::clear() {
    items_.clear();
    resume_at_ = 0;
    held_trades_ = 0;
    held_trade_bytes_ = 0;
}

}  // namespace mdcast::server
