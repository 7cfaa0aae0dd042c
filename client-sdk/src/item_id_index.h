// The consumer's streaming items by the item id the server gave them: the one
// lookup every update makes. Open addressing in one array (linear probing,
// deletion by shifting the run back, so no tombstones), at most half full:
// an update touches one or two adjacent slots instead of a hash node and a
// bucket, and no division. Ids are a distributor id << 40 | an item number
// (proto/source_ids.h). The item number picks the slot directly, offset by a
// hash of the distributor: a distributor numbers its items 1, 2, 3..., so one
// distributor's items fill consecutive slots without a collision, four to a
// cache line. A multiplicative hash of the whole id scattered them, and with
// many consumers in one process the slot load was a cache miss on nearly every
// update (a quarter of the consumer's CPU at 50 connections).
//
// Id 0 is never stored (it marks a free slot; the server never assigns it).
// Holds what the consumer binds, so it is bounded by the items subscribed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mdcast::sdk {

template <class T>
class ItemIdIndex {
  public:
    // nullptr when `id` is not bound.
    T* find(uint64_t id) const {
        if (slots_.empty() || id == 0) return nullptr;
        for (size_t i = home(id);; i = next(i)) {
            const Slot& slot = slots_[i];
            if (slot.id == id) return slot.value;
            if (slot.id == 0) return nullptr;
        }
    }

    // Binds `id` (not 0) to `value`, replacing what it was bound to.
    void insert(uint64_t id, T* value) {
        if ((size_ + 1) * 2 > slots_.size()) grow();
        size_t i = home(id);
        while (slots_[i].id != 0 && slots_[i].id != id) i = next(i);
        if (slots_[i].id == 0) ++size_;
        slots_[i] = Slot{id, value};
    }

    // False when `id` was not bound.
    bool erase(uint64_t id) {
        if (slots_.empty() || id == 0) return false;
        size_t hole = home(id);
        while (slots_[hole].id != id) {
            if (slots_[hole].id == 0) return false;
            hole = next(hole);
        }
        // Shift back every later entry of the run that may move into the hole.
        for (size_t i = next(hole); slots_[i].id != 0; i = next(i)) {
            const size_t want = home(slots_[i].id);
            if (distance(want, i) >= distance(hole, i)) {
                slots_[hole] = slots_[i];
                hole = i;
            }
        }
        slots_[hole] = Slot{};
        --size_;
        return true;
    }

    // Calls visit(id, value) for every binding, in no particular order; the
    // index must not change meanwhile.
    template <class Visit>
    void for_each(Visit&& visit) const {
        for (const Slot& slot : slots_) {
            if (slot.id != 0) visit(slot.id, slot.value);
        }
    }

    void clear() {
        for (Slot& slot : slots_) slot = Slot{};
        size_ = 0;
    }
    size_t size() const { return size_; }

    // Slots examined to find `id`: 1 when it sits in its home slot (tests).
    size_t probes(uint64_t id) const {
        size_t count = 1;
        for (size_t i = home(id); slots_[i].id != id && slots_[i].id != 0; i = next(i)) ++count;
        return count;
    }

  private:
    struct Slot {
        uint64_t id = 0;
        T* value = nullptr;
    };

    size_t home(uint64_t id) const {
        const uint64_t source_offset = (id >> 40) * 0x9E37'79B9'7F4A'7C15ull;
        return static_cast<size_t>((id + source_offset) & (slots_.size() - 1));
    }
    size_t next(size_t i) const { return (i + 1) & (slots_.size() - 1); }
    // Steps from `from` forward to `to`, wrapping.
    size_t distance(size_t from, size_t to) const { return (to - from) & (slots_.size() - 1); }

    void grow() {
        std::vector<Slot> old;
        old.swap(slots_);
        const size_t capacity = old.empty() ? 16 : old.size() * 2;
        slots_.assign(capacity, Slot{});
        size_ = 0;
        for (const Slot& slot : old) {
            if (slot.id != 0) insert(slot.id, slot.value);
        }
    }

    std::vector<Slot> slots_;  // a power of two in size, or empty
    size_t size_ = 0;
};

}  // namespace mdcast::sdk
