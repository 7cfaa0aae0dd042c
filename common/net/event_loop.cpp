#include "common/net/event_loop.h"

#include <event2/event.h>

#include <stdexcept>

#include "common/clock.h"
#include "common/net/precise_timers.h"

namespace mdcast {

namespace {
timeval to_timeval(std::chrono::microseconds us) {
    return timeval{static_cast<time_t>(us.count() / 1'000'000),
                   static_cast<suseconds_t>(us.count() % 1'000'000)};
}
}  // namespace

struct EventLoop::SignalHandler {
    const EventLoop* loop = nullptr;
    std::function<void()> handler;
    event* ev = nullptr;
    ~SignalHandler() {
        if (ev) event_free(ev);
    }
    static void on_signal(evutil_socket_t, short, void* self) {
        auto* entry = static_cast<SignalHandler*>(self);
        const CallbackScope scope(*entry->loop);
        entry->handler();
    }
};

// libevent's own timers stay coarse in both modes (only a TLS handshake
// timeout, in milliseconds, uses one directly); a kPrecise loop's Timers run
// on PreciseTimers.
EventLoop::EventLoop(Timers timers) : base_(event_base_new()) {
    if (!base_) throw std::runtime_error("event_base_new failed");
    if (timers == Timers::kPrecise) {
        try {
            precise_ = std::make_unique<PreciseTimers>(*this);
        } catch (...) {
            event_base_free(base_);
            throw;
        }
    }
}

EventLoop::~EventLoop() {
    signals_.clear();
    precise_.reset();
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
    entry->loop = this;
    entry->handler = std::move(handler);
    entry->ev = evsignal_new(base_, signo, &SignalHandler::on_signal, entry.get());
    if (!entry->ev || evsignal_add(entry->ev, nullptr) != 0) {
        throw std::runtime_error("cannot install signal handler");
    }
    signals_.push_back(std::move(entry));
}

Timer::Timer(EventLoop& loop, std::function<void()> callback)
    : loop_(loop), callback_(std::move(callback)), precise_(loop.precise_timers()) {
    if (precise_) {
        precise_->add(*this);
        return;
    }
    event_ = event_new(loop.base(), -1, 0, &Timer::on_fire, this);
    if (!event_) throw std::runtime_error("event_new failed");
}

Timer::~Timer() {
    if (precise_) precise_->remove(*this);
    if (event_) event_free(event_);
}

void Timer::arm(std::chrono::microseconds delay, bool periodic) {
    periodic_ = periodic;
    interval_ = delay;
    if (precise_) {
        armed_ = true;
        deadline_ns_ = monotonic_ns() + delay.count() * 1000;
        precise_->armed(deadline_ns_);
        return;
    }
    const timeval tv = to_timeval(delay);
    event_add(event_, &tv);  // re-arming a pending timer moves its deadline
}

void Timer::start_once(std::chrono::microseconds delay) {
    arm(delay, false);
}

void Timer::postpone(std::chrono::microseconds delay) {
    const bool was_pending = precise_ && armed_;
    const int64_t old_deadline_ns = deadline_ns_;
    arm(delay, false);
    if (was_pending && deadline_ns_ > old_deadline_ns) precise_->postponed(old_deadline_ns);
}

void Timer::start_periodic(std::chrono::microseconds interval) {
    arm(interval, true);
}

void Timer::stop() {
    periodic_ = false;
    armed_ = false;
    if (event_) event_del(event_);
}

bool Timer::pending() const {
    if (precise_) return armed_;
    return event_pending(event_, EV_TIMEOUT, nullptr) != 0;
}

void Timer::expire(int64_t now_ns) {
    if (periodic_) {
        deadline_ns_ = now_ns + interval_.count() * 1000;
        precise_->armed(deadline_ns_);
    } else {
        armed_ = false;
    }
    callback_();
}

void Timer::on_fire(int, short, void* self) {
    auto* timer = static_cast<Timer*>(self);
    const EventLoop::CallbackScope scope(timer->loop_);
    if (timer->periodic_) {
        const timeval tv = to_timeval(timer->interval_);
        event_add(timer->event_, &tv);
    }
    timer->callback_();
}

Trigger::Trigger(EventLoop& loop, std::function<void()> callback)
    : loop_(loop),
      callback_(std::move(callback)),
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
    const EventLoop::CallbackScope scope(trigger->loop_);
    trigger->armed_ = false;
    trigger->callback_();
}

}  // namespace mdcast
