// The one event loop of a process (MISSION.md, design rule 1) and the small
// RAII pieces that hang work on it: timers, triggers and signal handlers.
// Nothing here is thread-safe; everything runs on the loop's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

struct event_base;
struct event;

namespace mdcast {

class PreciseTimers;

class EventLoop {
  public:
    // kPrecise: microsecond timers (NAK back-off, heartbeats, coalescing) on
    // one timerfd set only when an earlier deadline appears
    // (common/net/precise_timers.h), not on libevent's precise timer, which
    // re-arms a timerfd on every loop iteration (one system call per wake-up,
    // about 5 µs on the development VM): the daemons'.
    // kCoarse: timers on libevent's heap and the kernel's coarse monotonic
    // clock (its tick, 1-4 ms), for loops whose timers are all in milliseconds
    // or more and that wake often: the client SDK's.
    enum class Timers : uint8_t { kPrecise, kCoarse };

    explicit EventLoop(Timers timers = Timers::kPrecise);
    ~EventLoop();
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;

    event_base* base() const { return base_; }
    // The microsecond timers of a kPrecise loop; null for kCoarse.
    PreciseTimers* precise_timers() const { return precise_.get(); }

    // Runs until stop() is called or no events remain.
    void run();
    // Makes run() return after the current callback; safe to call from any callback.
    void stop();

    // Runs `handler` on the loop when `signo` arrives (not in signal context).
    void on_signal(int signo, std::function<void()> handler);

    // The callback lock (null, the default: none). Every callback the loop
    // runs for the objects in this folder (Timers, Triggers, signal handlers,
    // precise timers, TcpConnections and their TLS streams) and for the SDK's
    // (its I/O thread's wake-up, a connect in progress) holds it while it
    // runs; the loop's own bookkeeping and its sleep do not. A thread holding
    // it therefore knows that the loop's thread is not inside any of those
    // objects: the SDK publisher writes from the publishing thread this way
    // (docs/sdk.md). Recursive, because a TLS stream may call back inside a
    // call made from another callback. Set it before the loop runs.
    void set_callback_lock(std::recursive_mutex* lock) { callback_lock_ = lock; }

    // Held by a callback while it runs: the loop's callback lock, if it has one.
    class CallbackScope {
      public:
        explicit CallbackScope(const EventLoop& loop) : lock_(loop.callback_lock_) {
            if (lock_) lock_->lock();
        }
        ~CallbackScope() {
            if (lock_) lock_->unlock();
        }
        CallbackScope(const CallbackScope&) = delete;
        CallbackScope& operator=(const CallbackScope&) = delete;

      private:
        std::recursive_mutex* lock_;
    };

  private:
    struct SignalHandler;
    event_base* base_;
    std::recursive_mutex* callback_lock_ = nullptr;
    std::unique_ptr<PreciseTimers> precise_;
    std::vector<std::unique_ptr<SignalHandler>> signals_;
};

// A one-shot or periodic timer. Stops itself on destruction. Re-arming a
// pending timer moves its deadline.
class Timer {
  public:
    Timer(EventLoop& loop, std::function<void()> callback);
    ~Timer();
    Timer(const Timer&) = delete;
    Timer& operator=(const Timer&) = delete;

    void start_once(std::chrono::microseconds delay);
    // start_once for a timer pushed back while its loop is awake anyway. On a
    // kPrecise loop whose timerfd waits for this timer, the timerfd is set for
    // the new earliest deadline at once (one system call) rather than left to
    // fire for nothing and wake the loop; start_once leaves it (see
    // precise_timers.h), which is cheaper for a timer moved only now and then.
    void postpone(std::chrono::microseconds delay);
    void start_periodic(std::chrono::microseconds interval);
    void stop();
    bool pending() const;
    // When it fires (CLOCK_MONOTONIC ns), on a kPrecise loop while pending.
    int64_t deadline_ns() const { return deadline_ns_; }

  private:
    friend class PreciseTimers;
    static void on_fire(int, short, void* self);
    void arm(std::chrono::microseconds delay, bool periodic);
    void expire(int64_t now_ns);  // kPrecise: the deadline passed
    const EventLoop& loop_;
    std::function<void()> callback_;
    PreciseTimers* precise_;  // kPrecise loops
    event* event_ = nullptr;  // kCoarse loops: a libevent timer
    bool periodic_ = false;
    bool armed_ = false;  // kPrecise
    int64_t deadline_ns_ = 0;
    std::chrono::microseconds interval_{0};
};

// Runs a callback later in the current loop iteration, after the I/O callbacks
// already ready in this iteration. This is our "before sleep" hook: the flush
// point of natural batching. Firing it again before it runs is a no-op.
class Trigger {
  public:
    Trigger(EventLoop& loop, std::function<void()> callback);
    ~Trigger();
    Trigger(const Trigger&) = delete;
    Trigger& operator=(const Trigger&) = delete;

    void fire();

  private:
    static void on_fire(int, short, void* self);
    const EventLoop& loop_;
    std::function<void()> callback_;
    event* event_;
    bool armed_ = false;
};

}  // namespace mdcast
