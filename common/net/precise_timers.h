// Microsecond timers for a daemon's event loop without a system call per
// wake-up.
//
// libevent's precise timer (EVENT_BASE_FLAG_PRECISE_TIMER) re-arms a timerfd
// before every epoll_wait, whether the next deadline moved or not: one
// timerfd_settime per loop iteration, about 5 µs on the development VM, paid
// on every wake-up of a busy server or distributor. Here the loop's Timers keep
// their own deadlines and share one timerfd, which is set only when a deadline
// earlier than the one it is set for appears. A timer stopped or moved later
// leaves the timerfd set early: it then fires once for nothing and is set for
// the real next deadline. A hot timer pushed back again and again while the
// loop is awake (the backbone heartbeat while data flows) uses
// Timer::postpone instead: one system call then, and no wake-up for nothing.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

struct event_base;
struct event;

namespace mdcast {

class EventLoop;
class Timer;

class PreciseTimers {
  public:
    // On `loop`, whose base is already made.
    explicit PreciseTimers(const EventLoop& loop);
    ~PreciseTimers();
    PreciseTimers(const PreciseTimers&) = delete;
    PreciseTimers& operator=(const PreciseTimers&) = delete;

    void add(Timer& timer);
    void remove(Timer& timer);
    // `timer` now expires at `deadline_ns` (CLOCK_MONOTONIC).
    void armed(int64_t deadline_ns);
    // A pending timer moved later from `old_deadline_ns`: when the timerfd was
    // set for that deadline, it is set for the earliest one now.
    void postponed(int64_t old_deadline_ns);

    // timerfd_settime calls so far (the cost this class exists to avoid).
    uint64_t settimes() const { return settimes_; }
    // Times the timerfd woke the loop, due timers or not.
    uint64_t wakeups() const { return wakeups_; }

  private:
    static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
    static void on_ready(int fd, short what, void* self);
    void run_due();
    void set(int64_t deadline_ns);
    int64_t earliest() const;  // of the pending timers; kNever when none

    const EventLoop& loop_;
    int fd_;
    event* event_;
    int64_t set_for_ = kNever;  // the deadline the timerfd will fire at
    std::vector<Timer*> timers_;
    std::vector<Timer*> due_;  // this round's; a timer destroyed meanwhile is nulled
    uint64_t settimes_ = 0;
    uint64_t wakeups_ = 0;
};

}  // namespace mdcast
