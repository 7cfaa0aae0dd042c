// Tests for tools/bench/spin_lock.h: the bench consumer's statistics lock.
#include "tools/bench/spin_lock.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>

using mdcast::tools::SpinLock;

TEST_CASE("SpinLock: two threads counting under it lose no increment") {
    SpinLock lock;
    uint64_t a = 0, b = 0;  // plain members, as the bench consumer's statistics
    constexpr int kRounds = 200'000;
    const auto count = [&] {
        for (int i = 0; i < kRounds; ++i) {
            std::lock_guard guard(lock);
            ++a;
            b += 2;
        }
    };
    std::thread other(count);
    count();
    other.join();
    CHECK(a == 2u * kRounds);
    CHECK(b == 4u * kRounds);
}

TEST_CASE("SpinLock: lock() waits for the holder's unlock()") {
    SpinLock lock;
    lock.lock();
    std::atomic<bool> acquired{false};
    std::thread waiter([&] {
        std::lock_guard guard(lock);
        acquired = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK_FALSE(acquired.load());
    lock.unlock();
    waiter.join();
    CHECK(acquired.load());
}
