#include "event_queue.h"

#include <algorithm>
#include <stdexcept>

namespace mdcast::sdk {

namespace {
// Room is given back to the producer after this many handled events, so a
// long dispatch() does not keep the I/O thread waiting until it returns.
constexpr size_t kReleaseEvery = 64;
}  // namespace

EventQueue::EventQueue(size_t capacity) {
    if (capacity == 0) throw std::invalid_argument("max_queued_events must be at least 1");
    slots_.reserve(capacity);
    for (size_t i = 0; i < capacity; ++i) slots_.push_back(std::make_unique<Slot>());
}

EventQueue::~EventQueue() = default;

Event* EventQueue::acquire(ItemHandle handle) {
    std::unique_lock lock(mutex_);
    if (handle && cancelled_.count(handle.id)) return nullptr;
    if (tail_ - head_ == slots_.size()) {
        if (waiters_released_) return nullptr;
        full_waits_.fetch_add(1, std::memory_order_relaxed);
        not_empty_.notify_one();  // events committed without a wake-up must not wait forever
        not_full_.wait(lock, [&] { return tail_ - head_ < slots_.size() || waiters_released_; });
        if (tail_ - head_ == slots_.size()) return nullptr;
        if (handle && cancelled_.count(handle.id)) return nullptr;
    }
    Slot& s = slot(tail_);
    s.skip.store(false, std::memory_order_relaxed);
    return &s.event;
}

void EventQueue::commit(bool wake_dispatcher) {
    {
        std::lock_guard lock(mutex_);
        // A cancel() between acquire() and here did not see this slot (it was
        // not yet in [head_, tail_)): it is skipped now, or its event would
        // reach the handler after cancel() returned.
        Slot& s = slot(tail_);
        const ItemHandle handle = s.event.handle();
        if (handle && !cancelled_.empty() && cancelled_.count(handle.id))
            s.skip.store(true, std::memory_order_release);
        ++tail_;
    }
    if (wake_dispatcher) wake();
}

void EventQueue::wake() {
    not_empty_.notify_one();
}

size_t EventQueue::dispatch(std::chrono::milliseconds timeout, size_t max_events,
                            const std::function<void(const Event&)>& handle) {
    uint64_t first = 0;
    size_t available = 0;
    {
        std::unique_lock lock(mutex_);
        if (dispatching_) throw std::logic_error("dispatch() is already running on another thread");
        not_empty_.wait_for(lock, timeout, [&] { return tail_ != head_; });
        first = head_;
        available = static_cast<size_t>(std::min<uint64_t>(tail_ - head_, max_events));
        if (available == 0) return 0;
        dispatching_ = true;
    }
    size_t handled = 0;
    try {
        for (size_t done = 0; done < available;) {
            const size_t count = std::min(kReleaseEvery, available - done);
            handled += handle_batch(first + done, count, handle);
            done += count;
        }
    } catch (...) {
        std::lock_guard lock(mutex_);
        dispatching_ = false;
        throw;
    }
    std::lock_guard lock(mutex_);
    dispatching_ = false;
    return handled;
}

// Handles [first, first + count) and gives their slots back to the producer.
// An event whose handler throws is consumed; the exception goes to the caller.
size_t EventQueue::handle_batch(uint64_t first, size_t count,
                                const std::function<void(const Event&)>& handle) {
    size_t handled = 0;
    uint64_t next = first;
    auto give_back = [&] {
        {
            std::lock_guard lock(mutex_);
            head_ = next;
        }
        not_full_.notify_one();
    };
    try {
        for (; next < first + count;) {
            Slot& s = slot(next++);
            if (s.skip.load(std::memory_order_acquire)) continue;
            handle(s.event);
            ++handled;
        }
    } catch (...) {
        give_back();
        throw;
    }
    give_back();
    return handled;
}

void EventQueue::cancel(ItemHandle handle) {
    std::lock_guard lock(mutex_);
    cancelled_.insert(handle.id);
    for (uint64_t i = head_; i < tail_; ++i) {
        Slot& s = slot(i);
        if (s.event.handle() == handle) s.skip.store(true, std::memory_order_release);
    }
}

void EventQueue::forget(ItemHandle handle) {
    std::lock_guard lock(mutex_);
    cancelled_.erase(handle.id);
}

void EventQueue::release_waiters() {
    {
        std::lock_guard lock(mutex_);
        waiters_released_ = true;
    }
    not_full_.notify_all();
}

size_t EventQueue::size() const {
    std::lock_guard lock(mutex_);
    return static_cast<size_t>(tail_ - head_);
}

}  // namespace mdcast::sdk
