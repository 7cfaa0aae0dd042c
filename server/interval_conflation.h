// Per-request conflation (Subscribe.conflate_ms): a subscriber that asked for
// at most one update per item every T ms, like ADS's conflation for desktop
// grids that do not want thousands of updates a second.
//
// The subscriptions of an item asking the same interval (view, encoding)
// share one PacedSlot (the SubscriptionTable groups them): merged once, sent
// to all of them at once. An update that comes while the slot is quiet goes out
// at once, as the backbone's bytes, and starts the interval; one that comes
// within the interval is merged into the slot (a field's latest value wins)
// and sent when the interval ends, as one update marked conflated that
// carries the latest sequence and stamp. So the subscriber is never more than
// T behind, and a value it sees is never older than one it has seen.
// A status does not wait: what is owed goes first (keeping order), then the
// status. An image replaces whatever was owed. A trade (Update.trade) is never
// merged: it goes out at once, on its own, after what is owed (kAfterOwed), so
// every trade reaches the subscriber in order with its own fields. The
// conflated update says how many updates it stands for and the stamp of the
// first, so a subscriber can count what it was spared and over what time.
//
// PacedQueue orders the slots that owe something by when they are due: one
// entry per owing slot, so it is bounded by the conflated groups.
#pragma once

#include <cstdint>
#include <queue>
#include <string>
#include <vector>

#include "proto/update_codec.h"
#include "server/merged_update.h"

namespace mdcast::server {

class JsonEncoder;

struct PacedSlot {
    // What admit() decided for an update.
    enum class Admit : uint8_t {
        kSend,       // send it now; the interval starts again
        kHeld,       // merged into what is owed, due at quiet_from_ns
        kAfterOwed,  // a trade while something is owed: take() that first, then send it
    };
    uint32_t interval_ms = 0;
    int64_t quiet_from_ns = 0;  // the next update at or after this goes out at once
    bool owed = false;
    MergedUpdate merged;  // what is owed

    // The update came at `now_ns`. kHeld: the caller queues the slot when
    // `owed` just became true. A trade is never kHeld.
    Admit admit(const proto::UpdateView& update, int64_t now_ns);
    // What is owed as one conflated Update frame (only `view`'s fields when
    // set) appended to `out` — binary, or JSON with `json` — and the interval
    // restarted at `now_ns`. Nothing when nothing is owed; false then.
    bool take(std::string& out, uint64_t item_id, const std::vector<uint32_t>& view, int64_t now_ns,
              const JsonEncoder* json = nullptr);
    // The same in two steps, for a caller that needs the update itself: what
    // is owed (valid until the slot changes), then sent() once it went out,
    // which restarts the interval at `now_ns`.
    proto::UpdateView owed_update(uint64_t item_id) const { return merged.to_update(item_id); }
    void sent(int64_t now_ns);
    // An image went out: it carries everything owed.
    void on_image();

  private:
    void clear_owed();
};

template <class Key>
class PacedQueue {
  public:
    void push(int64_t due_ns, Key key) { entries_.push(Entry{due_ns, key}); }
    bool empty() const { return entries_.empty(); }
    int64_t next_due_ns() const { return entries_.empty() ? 0 : entries_.top().due_ns; }
    size_t size() const { return entries_.size(); }
    // Calls `fire(key)` for every entry due by `now_ns`, earliest first.
    template <class Fire>
    void pop_due(int64_t now_ns, Fire&& fire) {
        while (!entries_.empty() && entries_.top().due_ns <= now_ns) {
            const Key key = entries_.top().key;
            entries_.pop();
            fire(key);
        }
    }

  private:
    struct Entry {
        int64_t due_ns;
        Key key;
        bool operator>(const Entry& other) const { return due_ns > other.due_ns; }
    };
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> entries_;
};

}  // namespace mdcast::server
