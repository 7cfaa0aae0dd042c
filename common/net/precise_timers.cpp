#include "common/net/precise_timers.h"

#include <event2/event.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <string>

#include "common/clock.h"
#include "common/net/event_loop.h"

namespace mdcast {

PreciseTimers::PreciseTimers(const EventLoop& loop)
    : loop_(loop), fd_(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)) {
    if (fd_ < 0) throw std::runtime_error(std::string("timerfd_create: ") + std::strerror(errno));
    event_ = event_new(loop.base(), fd_, EV_READ | EV_PERSIST, &PreciseTimers::on_ready, this);
    if (!event_ || event_add(event_, nullptr) != 0) {
        if (event_) event_free(event_);
        ::close(fd_);
        throw std::runtime_error("cannot watch the timerfd");
    }
}

PreciseTimers::~PreciseTimers() {
    event_free(event_);
    ::close(fd_);
}

void PreciseTimers::add(Timer& timer) {
    timers_.push_back(&timer);
}

void PreciseTimers::remove(Timer& timer) {
    std::erase(timers_, &timer);
    std::replace(due_.begin(), due_.end(), &timer, static_cast<Timer*>(nullptr));
}

void PreciseTimers::armed(int64_t deadline_ns) {
    if (deadline_ns < set_for_) set(deadline_ns);
}

void PreciseTimers::postponed(int64_t old_deadline_ns) {
    if (old_deadline_ns > set_for_) return;  // an earlier timer holds the timerfd
    const int64_t next = earliest();
    if (next != set_for_) set(next);
}

int64_t PreciseTimers::earliest() const {
    int64_t next = kNever;
    for (const Timer* timer : timers_) {
        if (timer->pending()) next = std::min(next, timer->deadline_ns());
    }
    return next;
}

void PreciseTimers::set(int64_t deadline_ns) {
    set_for_ = deadline_ns;
    itimerspec spec{};
    if (deadline_ns != kNever) {
        // 0 would disarm the timerfd: a deadline already past fires at once all the same.
        const int64_t at = std::max<int64_t>(deadline_ns, 1);
        spec.it_value.tv_sec = at / 1'000'000'000;
        spec.it_value.tv_nsec = at % 1'000'000'000;
    }
    ++settimes_;
    timerfd_settime(fd_, TFD_TIMER_ABSTIME, &spec, nullptr);
}

void PreciseTimers::on_ready(int, short, void* self) {
    auto* timers = static_cast<PreciseTimers*>(self);
    const EventLoop::CallbackScope scope(timers->loop_);
    ++timers->wakeups_;
    uint64_t expirations = 0;
    [[maybe_unused]] const ssize_t n = ::read(timers->fd_, &expirations, sizeof expirations);
    timers->run_due();
}

// Fires every timer due now, each at most once (a timer re-armed at zero delay
// by its callback waits for the next loop iteration, as with libevent's timers,
// so I/O runs in between), earliest first; then sets the timerfd for the next.
void PreciseTimers::run_due() {
    const int64_t now = monotonic_ns();
    due_.clear();
    for (Timer* timer : timers_) {
        if (timer->pending() && timer->deadline_ns() <= now) due_.push_back(timer);
    }
    std::sort(due_.begin(), due_.end(),
              [](const Timer* a, const Timer* b) { return a->deadline_ns() < b->deadline_ns(); });
    for (size_t i = 0; i < due_.size(); ++i) {
        Timer* timer = due_[i];  // nulled if an earlier callback destroyed it
        if (timer && timer->pending() && timer->deadline_ns() <= now) timer->expire(now);
    }
    due_.clear();
    const int64_t next = earliest();
    set_for_ = kNever;
    if (next != kNever) set(next);
}

}  // namespace mdcast
