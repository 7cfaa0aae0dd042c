// The bounded queue between the I/O thread (producer) and the thread that
// calls Consumer::dispatch() (consumer), for Delivery::kDispatch.
//
// A ring of `capacity` Event slots, allocated once: an event's storage (field
// vector, text) is reused when its slot comes round again, so steady-state
// traffic allocates nothing. The producer fills the slot at the tail outside
// the lock and publishes it with commit(); the consumer handles slots from the
// head outside the lock and frees them afterwards, so neither side holds the
// lock while it copies fields or runs the application's handler.
//
// Full: acquire() waits for room (the I/O thread stops reading meanwhile; the
// server sees back-pressure) until release_waiters() is called (stopping).
// Cancelled handles: cancel(h) marks h's queued events to be skipped and
// refuses new ones until forget(h), so no event for h reaches the handler
// after cancel() returns on the dispatching thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "mdcast/event.h"

namespace mdcast::sdk {

class EventQueue {
  public:
    explicit EventQueue(size_t capacity);
    ~EventQueue();

    // ---- producer (I/O thread) ----
    // The slot to fill for an event of `handle` (0: not an item event), or
    // nullptr when the handle is cancelled or the queue is full and waiters
    // were released. Waits while full otherwise.
    Event* acquire(ItemHandle handle);
    // Publishes the slot returned by the last acquire(). With `wake` false
    // the dispatching thread is not woken: the producer calls wake() once
    // after a burst (the I/O thread does at the end of each loop iteration),
    // so a dispatcher faster than the network handles events in batches
    // instead of being woken for each one.
    void commit(bool wake = true);
    void wake();

    // ---- consumer (one thread at a time) ----
    // Calls `handle` for up to `max_events` events, waiting up to `timeout` for
    // the first. Returns the number handled (skipped ones do not count).
    size_t dispatch(std::chrono::milliseconds timeout, size_t max_events,
                    const std::function<void(const Event&)>& handle);

    // ---- any thread ----
    void cancel(ItemHandle handle);
    void forget(ItemHandle handle);
    // acquire() stops waiting for room from now on (returns nullptr when full).
    void release_waiters();
    size_t size() const;
    uint64_t full_waits() const { return full_waits_.load(std::memory_order_relaxed); }

  private:
    struct Slot {
        Event event;
        std::atomic<bool> skip{false};
    };
    Slot& slot(uint64_t index) { return *slots_[index % slots_.size()]; }
    size_t handle_batch(uint64_t first, size_t count,
                        const std::function<void(const Event&)>& handle);

    std::vector<std::unique_ptr<Slot>> slots_;
    mutable std::mutex mutex_;
    std::condition_variable not_empty_;
    std::condition_variable not_full_;
    uint64_t head_ = 0;  // next to handle
    uint64_t tail_ = 0;  // next to fill
    bool waiters_released_ = false;
    bool dispatching_ = false;
    std::unordered_set<uint64_t> cancelled_;
    std::atomic<uint64_t> full_waits_{0};
};

}  // namespace mdcast::sdk
