// The one event loop of a process (MISSION.md, design rule 1) and the small
// RAII pieces that hang work on it: timers, triggers and signal handlers.
// Nothing here is thread-safe; everything runs on the loop's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

struct event_base;
struct event;

namespace mdcast {

class EventLoop {
  public:
    // kPrecise: microsecond timers (NAK back-off, heartbeats, coalescing), at
    // the cost of libevent re-arming a timerfd on every loop iteration, one
    // extra system call per wake-up (about 5 µs on the development VM).
    // kCoarse: timers on the kernel's coarse monotonic clock (its tick, 1-4
    // ms) and no extra system call per wake-up, for loops whose timers are
    // all in milliseconds or more and that wake often: the client SDK's.
    enum class Timers : uint8_t { kPrecise, kCoarse };

    explicit EventLoop(Timers timers = Timers::kPrecise);
    ~EventLoop();
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;

    event_base* base() const { return base_; }

    // Runs until stop() is called or no events remain.
    void run();
    // Makes run() return after the current callback; safe to call from any callback.
    void stop();

    // Runs `handler` on the loop when `signo` arrives (not in signal context).
    void on_signal(int signo, std::function<void()> handler);

  private:
    struct SignalHandler;
    event_base* base_;
    std::vector<std::unique_ptr<SignalHandler>> signals_;
};

// A one-shot or periodic timer. Stops itself on destruction.
class Timer {
  public:
    Timer(EventLoop& loop, std::function<void()> callback);
    ~Timer();
    Timer(const Timer&) = delete;
    Timer& operator=(const Timer&) = delete;

    void start_once(std::chrono::microseconds delay);
    void start_periodic(std::chrono::microseconds interval);
    void stop();
    bool pending() const;

  private:
    static void on_fire(int, short, void* self);
    void arm(std::chrono::microseconds delay, bool periodic);
    std::function<void()> callback_;
    event* event_;
    bool periodic_ = false;
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
    std::function<void()> callback_;
    event* event_;
    bool armed_ = false;
};

}  // namespace mdcast
