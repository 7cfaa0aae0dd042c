#include "shared_loop.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace mdcast::sdk {

SharedLoop::SharedLoop() {
    thread_.start([this] {
        EventLoop loop(EventLoop::Timers::kCoarse);  // the clients' timers are all in ms
        loop_ = &loop;
        // By index: a wake handler may start another client (a task, run
        // later), never remove one while this runs.
        thread_.run(loop, [this] {
            for (size_t i = 0; i < wake_handlers_.size(); ++i) wake_handlers_[i].second();
        });
        loop_ = nullptr;
    });
}

SharedLoop::~SharedLoop() {
    if (thread_.on_io_thread()) {
        // Joining would wait forever and not joining leaves a thread running
        // code that is being freed: neither is acceptable, so say so and stop.
        std::fputs(
            "mdcast: fatal: the last reference to an IoContext was released on its own I/O "
            "thread (inside a handler); release it on another thread\n",
            stderr);
        std::abort();
    }
    thread_.shutdown([this] { thread_.stop_loop(); });
}

void SharedLoop::add_wake_handler(const void* owner, std::function<void()> on_wake) {
    wake_handlers_.emplace_back(owner, std::move(on_wake));
}

void SharedLoop::remove_wake_handler(const void* owner) {
    std::erase_if(wake_handlers_, [owner](const auto& entry) { return entry.first == owner; });
}

void SharedSeat::post(Task task) {
    std::lock_guard lock(mutex_);
    if (phase_ == Phase::kNew) {
        before_start_.push_back(std::move(task));
    } else if (phase_ == Phase::kStarted) {
        loop_.thread().post(std::move(task));
    }  // kStopped: dropped, as tasks posted after an own thread ended never run
}

void SharedSeat::start(Task open) {
    std::lock_guard lock(mutex_);
    if (phase_ != Phase::kNew) throw std::logic_error("start() called twice");
    phase_ = Phase::kStarted;
    // Posted under the lock: every later post() lands behind it.
    loop_.thread().post([open = std::move(open), held = std::move(before_start_)] {
        open();
        for (const Task& task : held) task();
    });
    before_start_.clear();
}

void SharedSeat::stop(Task begin_close, const std::function<void()>& unblock) {
    std::future<void> done;
    {
        std::lock_guard lock(mutex_);
        if (phase_ != Phase::kStarted) return;  // never started, or stopped already
        if (loop_.on_io_thread()) {
            throw std::logic_error("stop() cannot be called from a handler or callback: this " +
                                   what_ + " runs on a shared IoContext, and this is its thread");
        }
        phase_ = Phase::kStopped;
        closed_ = std::make_shared<std::promise<void>>();
        done = closed_->get_future();
        loop_.thread().post(std::move(begin_close));
    }
    if (unblock) unblock();
    done.wait();
}

void SharedSeat::closed() {
    std::shared_ptr<std::promise<void>> closed;
    {
        std::lock_guard lock(mutex_);
        closed = closed_;
    }
    if (closed) closed->set_value();
}

ClientThread::ClientThread(const std::shared_ptr<IoContext>& context, const char* what)
    : shared_(context ? &IoContextAccess::shared(*context) : nullptr),
      own_(shared_ ? nullptr : std::make_unique<IoThread>()),
      io_(shared_ ? shared_->thread() : *own_),
      seat_(shared_ ? std::make_unique<SharedSeat>(*shared_, what) : nullptr) {}

void ClientThread::post(Task task) {
    if (seat_) return seat_->post(std::move(task));
    io_.post(std::move(task));  // the IoThread orders start and end itself
}

void ClientThread::start(Task open_shared, std::function<void()> run_own) {
    if (seat_) return seat_->start(std::move(open_shared));
    io_.start(std::move(run_own));
}

void ClientThread::stop(Task close_shared, Task stop_own, const std::function<void()>& unblock) {
    if (seat_) return seat_->stop(std::move(close_shared), unblock);
    io_.shutdown(std::move(stop_own), unblock);
}

void SharedSeat::die(const std::string& why) const {
    std::fprintf(stderr,
                 "mdcast: fatal: a started %s was destroyed inside a handler on its IoContext's "
                 "thread (%s); stop() or destroy it on another thread\n",
                 what_.c_str(), why.c_str());
    std::abort();
}

}  // namespace mdcast::sdk
