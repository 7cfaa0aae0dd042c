// Requests sent on and awaiting their answer, each under an id of the holder's
// own and with a deadline: the bookkeeping every hop of a post keeps (the
// server's PostRouter, the distributor's PostRelay). Deadlines are kept in the
// order the requests were added, so expiry looks only at the oldest; with one
// timeout per holder that order is the deadlines' order.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace mdcast {

template <class Entry>
class AwaitingAnswers {
  public:
    // Keeps `entry` until taken or expired; returns its id (1, 2, ...; never reused).
    uint64_t add(Entry entry, int64_t deadline_ns) {
        const uint64_t id = next_id_++;
        waiting_.emplace(id, Waiting{std::move(entry), deadline_ns});
        by_age_.push_back(id);
        return id;
    }
    const Entry* find(uint64_t id) const {
        const auto it = waiting_.find(id);
        return it == waiting_.end() ? nullptr : &it->second.entry;
    }
    Entry* find(uint64_t id) {
        const auto it = waiting_.find(id);
        return it == waiting_.end() ? nullptr : &it->second.entry;
    }
    std::optional<Entry> take(uint64_t id) {
        const auto it = waiting_.find(id);
        if (it == waiting_.end()) return std::nullopt;
        Entry entry = std::move(it->second.entry);
        waiting_.erase(it);
        return entry;
    }
    // Every entry whose deadline is at or before `now`, oldest first, taken
    // and handed to on_expired(id, entry).
    template <class OnExpired>
    void expire(int64_t now, OnExpired&& on_expired) {
        while (!by_age_.empty()) {
            const auto it = waiting_.find(by_age_.front());
            if (it != waiting_.end() && it->second.deadline_ns > now) return;
            const uint64_t id = by_age_.front();
            by_age_.pop_front();
            if (it == waiting_.end()) continue;  // answered already
            Entry entry = std::move(it->second.entry);
            waiting_.erase(it);
            on_expired(id, std::move(entry));
        }
    }
    // Takes every entry `which` selects, in no particular order.
    template <class Which>
    std::vector<std::pair<uint64_t, Entry>> take_if(Which&& which) {
        std::vector<std::pair<uint64_t, Entry>> taken;
        for (auto it = waiting_.begin(); it != waiting_.end();) {
            if (which(it->second.entry)) {
                taken.emplace_back(it->first, std::move(it->second.entry));
                it = waiting_.erase(it);
            } else {
                ++it;
            }
        }
        return taken;
    }
    size_t size() const { return waiting_.size(); }

  private:
    struct Waiting {
        Entry entry;
        int64_t deadline_ns;
    };
    uint64_t next_id_ = 1;
    std::unordered_map<uint64_t, Waiting> waiting_;
    std::deque<uint64_t> by_age_;  // ids in the order added; answered ones dropped when reached
};

}  // namespace mdcast
