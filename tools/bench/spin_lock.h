// A lock for data one thread writes all the time and another reads now and
// then: the bench consumer's per-connection statistics, taken by the handler
// for every update and by the main thread once per stats interval.
//
// Uncontended, lock() is one atomic exchange and unlock() one store, inline;
// std::mutex calls into the C library both ways (about 60 instructions per
// update in the bench consumer's profile). Contended, the waiter yields its
// core rather than spinning: on a pinned run the main thread and the I/O thread
// share one core, so the holder may be waiting for the waiter's time slice.
// Satisfies BasicLockable (std::lock_guard).
#pragma once

#include <atomic>
#include <thread>

namespace mdcast::tools {

class SpinLock {
  public:
    void lock() {
        while (locked_.exchange(true, std::memory_order_acquire)) {
            while (locked_.load(std::memory_order_relaxed)) std::this_thread::yield();
        }
    }
    void unlock() { locked_.store(false, std::memory_order_release); }

  private:
    std::atomic<bool> locked_{false};
};

}  // namespace mdcast::tools
