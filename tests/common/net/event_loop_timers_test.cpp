// Timers on both kinds of loop: kPrecise (the daemons': one timerfd set only
// when an earlier deadline appears, common/net/precise_timers.h) and kCoarse
// (the SDK's: libevent's timer heap); and the loop's callback lock, held by
// callbacks only.
#include <event2/event.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/net/event_loop.h"
#include "common/net/precise_timers.h"

using namespace mdcast;
using std::chrono::microseconds;
using std::chrono::milliseconds;

namespace {

// Stops the loop after a while whatever happens, so a broken timer fails the
// test instead of hanging it.
struct Guard {
    explicit Guard(EventLoop& loop) : timer(loop, [&loop] { loop.stop(); }) {
        timer.start_once(std::chrono::seconds(5));
    }
    Timer timer;
};

}  // namespace

TEST_CASE("timers fire once, in deadline order, precise ones never early", "[event_loop]") {
    for (auto mode : {EventLoop::Timers::kPrecise, EventLoop::Timers::kCoarse}) {
        EventLoop loop(mode);
        Guard guard(loop);
        std::vector<int> fired;
        const int64_t start = monotonic_ns();
        int64_t third_at = 0;
        Timer a(loop, [&] { fired.push_back(1); });
        Timer b(loop, [&] { fired.push_back(2); });
        Timer c(loop, [&] {
            fired.push_back(3);
            third_at = monotonic_ns();
            loop.stop();
        });
        c.start_once(microseconds(3000));
        a.start_once(microseconds(300));
        b.start_once(microseconds(1000));
        CHECK(a.pending());
        loop.run();
        CHECK(fired == std::vector<int>{1, 2, 3});
        CHECK_FALSE(a.pending());
        // The coarse clock lags by up to a kernel tick, so a coarse timer may fire that early.
        if (mode == EventLoop::Timers::kPrecise) CHECK(third_at - start >= 3'000'000);
    }
}

TEST_CASE("re-arming moves a timer's deadline and stop() cancels it", "[event_loop]") {
    for (auto mode : {EventLoop::Timers::kPrecise, EventLoop::Timers::kCoarse}) {
        EventLoop loop(mode);
        Guard guard(loop);
        int moved = 0, stopped = 0;
        int64_t moved_at = 0;
        const int64_t start = monotonic_ns();
        Timer t(loop, [&] {
            ++moved;
            moved_at = monotonic_ns();
        });
        Timer s(loop, [&] { ++stopped; });
        Timer end(loop, [&] { loop.stop(); });
        t.start_once(microseconds(200));
        t.start_once(milliseconds(5));  // later: the first deadline no longer counts
        s.start_once(microseconds(100));
        s.stop();
        end.start_once(milliseconds(20));
        loop.run();
        CHECK(moved == 1);
        if (mode == EventLoop::Timers::kPrecise) CHECK(moved_at - start >= 5'000'000);
        CHECK(stopped == 0);
    }
}

TEST_CASE("a periodic timer repeats until stopped, from its own callback", "[event_loop]") {
    for (auto mode : {EventLoop::Timers::kPrecise, EventLoop::Timers::kCoarse}) {
        EventLoop loop(mode);
        Guard guard(loop);
        int ticks = 0;
        Timer t(loop, [] {});
        Timer periodic(loop, [&] {
            if (++ticks == 5) {
                loop.stop();
            }
        });
        periodic.start_periodic(microseconds(500));
        loop.run();
        CHECK(ticks == 5);
        CHECK(periodic.pending());
        periodic.stop();
        CHECK_FALSE(periodic.pending());
    }
}

TEST_CASE("a callback may destroy another timer due in the same round", "[event_loop]") {
    EventLoop loop(EventLoop::Timers::kPrecise);
    Guard guard(loop);
    int victim_fired = 0;
    auto victim = std::make_unique<Timer>(loop, [&] { ++victim_fired; });
    Timer killer(loop, [&] { victim.reset(); });
    Timer end(loop, [&] { loop.stop(); });
    killer.start_once(microseconds(100));
    victim.reset(new Timer(loop, [&] { ++victim_fired; }));
    victim->start_once(microseconds(150));
    // Both are due by the time the loop first looks.
    usleep(2000);
    end.start_once(milliseconds(5));
    loop.run();
    CHECK(victim_fired == 0);
}

TEST_CASE("a timer re-armed at zero delay lets ready I/O run in between", "[event_loop]") {
    for (auto mode : {EventLoop::Timers::kPrecise, EventLoop::Timers::kCoarse}) {
        EventLoop loop(mode);
        Guard guard(loop);
        int fd[2];
        REQUIRE(pipe(fd) == 0);
        REQUIRE(write(fd[1], "x", 1) == 1);
        int spins = 0, spins_when_read = -1;
        Timer spin(loop, [&] {
            if (++spins < 1000) spin.start_once(microseconds(0));
        });
        struct Reader {
            int* spins;
            int* seen;
            EventLoop* loop;
        } reader{&spins, &spins_when_read, &loop};
        event* readable = event_new(
            loop.base(), fd[0], EV_READ,
            [](evutil_socket_t, short, void* arg) {
                auto* r = static_cast<Reader*>(arg);
                *r->seen = *r->spins;
                r->loop->stop();
            },
            &reader);
        event_add(readable, nullptr);
        spin.start_once(microseconds(0));
        loop.run();
        CHECK(spins_when_read >= 0);
        CHECK(spins_when_read < 1000);
        event_free(readable);
        close(fd[0]);
        close(fd[1]);
    }
}

TEST_CASE("a precise loop sets its timerfd only for an earlier deadline", "[event_loop]") {
    EventLoop loop(EventLoop::Timers::kPrecise);
    PreciseTimers& timers = *loop.precise_timers();
    Timer heartbeat(loop, [] {});
    heartbeat.start_once(milliseconds(10));
    const uint64_t before = timers.settimes();
    for (int i = 1; i <= 1000; ++i) heartbeat.start_once(milliseconds(10) + microseconds(i));
    CHECK(timers.settimes() == before);  // later deadlines: no system call
    Timer sooner(loop, [] {});
    sooner.start_once(milliseconds(1));
    CHECK(timers.settimes() == before + 1);
}

namespace {
// Whether another thread could take `lock` now (it takes and releases it).
bool free_for_others(std::recursive_mutex& lock) {
    bool taken = false;
    std::thread([&] {
        taken = lock.try_lock();
        if (taken) lock.unlock();
    }).join();
    return taken;
}
}  // namespace

TEST_CASE("a loop's callback lock is held by its timers' and triggers' callbacks only",
          "[event_loop]") {
    for (auto mode : {EventLoop::Timers::kPrecise, EventLoop::Timers::kCoarse}) {
        EventLoop loop(mode);
        std::recursive_mutex lock;
        loop.set_callback_lock(&lock);
        Guard guard(loop);
        std::vector<bool> free_inside;
        Trigger trigger(loop, [&] {
            free_inside.push_back(free_for_others(lock));
            loop.stop();
        });
        Timer timer(loop, [&] {
            free_inside.push_back(free_for_others(lock));
            trigger.fire();
        });
        timer.start_once(microseconds(100));
        loop.run();
        CHECK(free_inside == std::vector<bool>{false, false});
        CHECK(free_for_others(lock));  // released between callbacks and after the loop
    }
}

TEST_CASE("a postponed timer sets the timerfd again only when it was waiting for it",
          "[event_loop]") {
    EventLoop loop(EventLoop::Timers::kPrecise);
    PreciseTimers& timers = *loop.precise_timers();
    Timer heartbeat(loop, [] {});
    heartbeat.start_once(milliseconds(10));
    uint64_t before = timers.settimes();
    heartbeat.postpone(milliseconds(20));  // the timerfd waited for it: set again
    CHECK(timers.settimes() == before + 1);
    CHECK(heartbeat.pending());
    Timer sooner(loop, [] {});
    sooner.start_once(milliseconds(1));  // now the timerfd waits for this one
    before = timers.settimes();
    heartbeat.postpone(milliseconds(30));
    CHECK(timers.settimes() == before);
    heartbeat.postpone(milliseconds(5));  // earlier than before, later than `sooner`
    CHECK(timers.settimes() == before);
}

TEST_CASE("a postponed timer does not wake the loop at its old deadline", "[event_loop]") {
    // Moved from 20 ms to 60 ms outside any timer callback (as the distributor
    // moves its heartbeat while reading a publisher). postpone: the loop wakes
    // once, at 60 ms; start_once would also wake it at 20 ms for nothing.
    for (const bool use_postpone : {true, false}) {
        EventLoop loop(EventLoop::Timers::kPrecise);
        PreciseTimers& timers = *loop.precise_timers();
        int64_t fired_after_ns = 0;
        const int64_t start = monotonic_ns();
        Timer heartbeat(loop, [&] {
            fired_after_ns = monotonic_ns() - start;
            loop.stop();
        });
        heartbeat.start_once(milliseconds(20));
        if (use_postpone) {
            heartbeat.postpone(milliseconds(60));
        } else {
            heartbeat.start_once(milliseconds(60));
        }
        const uint64_t before = timers.wakeups();
        loop.run();
        CHECK(fired_after_ns >= 60'000'000);
        CHECK(timers.wakeups() - before == (use_postpone ? 1u : 2u));
    }
}
