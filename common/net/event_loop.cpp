#include "common/net/event_loop.h"

#include <event2/event.h>

#include <stdexcept>

namespace mdcast {

namespace {
timeval to_timeval(std::chrono::microseconds us) {
    return timeval{static_cast<time_t>(us.count() / 1'000'000),
                   static_cast<suseconds_t>(us.count() % 1'000'000)};
}
}  // namespace

struct EventLoop::SignalHandler {
    std::function<void()> handler;
    event* ev = nullptr;
    ~SignalHandler() {
        if (ev) event_free(ev);
    }
    static void on_signal(evutil_socket_t, short, void* self) {
        static_cast<SignalHandler*>(self)->handler();
    }
};

namespace {
// Microsecond timers (NAK back-off, heartbeats, coalescing) need the precise
// timer: without it epoll rounds every timeout up to a millisecond.
event_base* new_base(EventLoop::Timers timers) {
    event_config* config = event_config_new();
    if (timers == EventLoop::Timers::kPrecise)
        event_config_set_flag(config, EVENT_BASE_FLAG_PRECISE_TIMER);
    event_base* base = event_base_new_with_config(config);
    event_config_free(config);
    return base;
}
}  // namespace

EventLoop::EventLoop(Timers timers) : base_(new_base(timers)) {
    if (!base_) throw std::runtime_error("event_base_new failed");
}

EventLoop::~EventLoop() {
    signals_.clear();
    event_base_free(base_);
}

void EventLoop::run() {
    event_base_dispatch(base_);
}

void EventLoop::stop() {
    event_base_loopbreak(base_);
}

void EventLoop::on_signal(int signo, std::function<void()> handler) {
    auto entry = std::make_unique<SignalHandler>();
    entry->handler = std::move(handler);
    entry->ev = evsignal_new(base_, signo, &SignalHandler::on_signal, entry.get());
    if (!entry->ev || evsignal_add(entry->ev, nullptr) != 0) {
        throw std::runtime_error("cannot install signal handler");
    }
    signals_.push_back(std::move(entry));
}

Timer::Timer(EventLoop& loop, std::function<void()> callback)
    : callback_(std::move(callback)), event_(event_new(loop.base(), -1, 0, &Timer::on_fire, this)) {
    if (!event_) throw std::runtime_error("event_new failed");
}

Timer::~Timer() {
    event_free(event_);
}

void Timer::arm(std::chrono::microseconds delay, bool periodic) {
    periodic_ = periodic;
    interval_ = delay;
    const timeval tv = to_timeval(delay);
    event_add(event_, &tv);  // re-arming a pending timer moves its deadline
}

void Timer::start_once(std::chrono::microseconds delay) {
    arm(delay, false);
}

void Timer::start_periodic(std::chrono::microseconds interval) {
    arm(interval, true);
}

void Timer::stop() {
    periodic_ = false;
    event_del(event_);
}

bool Timer::pending() const {
    return event_pending(event_, EV_TIMEOUT, nullptr) != 0;
}

void Timer::on_fire(int, short, void* self) {
    auto* timer = static_cast<Timer*>(self);
    if (timer->periodic_) {
        const timeval tv = to_timeval(timer->interval_);
        event_add(timer->event_, &tv);
    }
    timer->callback_();
}

Trigger::Trigger(EventLoop& loop, std::function<void()> callback)
    : callback_(std::move(callback)),
      event_(event_new(loop.base(), -1, 0, &Trigger::on_fire, this)) {
    if (!event_) throw std::runtime_error("event_new failed");
}

Trigger::~Trigger() {
    event_free(event_);
}

void Trigger::fire() {
    // Active events are queued at the tail of the current active list, so this
    // runs after every I/O callback that was already ready in this iteration.
    if (armed_) return;
    armed_ = true;
    event_active(event_, EV_TIMEOUT, 0);
}

void Trigger::on_fire(int, short, void* self) {
    auto* trigger = static_cast<Trigger*>(self);
    trigger->armed_ = false;
    trigger->callback_();
}

}  // namespace mdcast
