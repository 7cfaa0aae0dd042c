#include "io_thread.h"

#include <event2/event.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>

namespace mdcast::sdk {

IoThread::IoThread() : wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (wake_fd_ < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
}

IoThread::~IoThread() {
    join();
    ::close(wake_fd_);
}

void IoThread::start(std::function<void()> main) {
    std::lock_guard lock(lifecycle_mutex_);
    if (launched_) throw std::logic_error("start() called twice");
    launched_ = true;
    thread_ = std::thread([this, main = std::move(main)] {
        // A write to a socket the peer closed must fail with EPIPE here, not
        // kill the application (SIGPIPE's default): the SDK cannot ask every
        // application to ignore it, and OpenSSL writes with plain write().
        // Blocked in this thread only; a pending SIGPIPE is never delivered.
        sigset_t pipe;
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
        io_id_.store(std::this_thread::get_id());
        main();
    });
}

void IoThread::shutdown(Task stop, const Task& unblock) {
    if (on_io_thread())
        throw std::logic_error("stop() cannot be called from a handler or callback");
    {
        std::lock_guard lock(lifecycle_mutex_);
        if (!launched_ || shut_down_) return;
        shut_down_ = true;
    }
    post(std::move(stop));
    if (unblock) unblock();
    join();
}

void IoThread::join() {
    if (thread_.joinable() && std::this_thread::get_id() != thread_.get_id()) thread_.join();
}

void IoThread::post(Task task) {
    {
        std::lock_guard lock(mutex_);
        tasks_.push_back(std::move(task));
    }
    wake();
}

void IoThread::wake() {
    const uint64_t one = 1;
    // EAGAIN means the counter is already non-zero: a wake-up is pending anyway.
    [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void IoThread::run(EventLoop& loop, Task on_wake) {
    loop_ = &loop;
    on_wake_ = std::move(on_wake);
    event* ev = event_new(loop.base(), wake_fd_, EV_READ | EV_PERSIST, &on_readable, this);
    event_add(ev, nullptr);
    // Tasks posted before start() run from inside the loop, not before it: a
    // stop() among them breaks the loop, and libevent forgets a break asked
    // for before the loop runs (stop() right after start() then hung).
    event_active(ev, EV_READ, 1);
    loop.run();
    event_free(ev);
    loop_ = nullptr;
    on_wake_ = {};
}

void IoThread::stop_loop() {
    if (loop_) loop_->stop();
}

void IoThread::on_readable(int fd, short, void* self) {
    auto* thread = static_cast<IoThread*>(self);
    const EventLoop::CallbackScope scope(*thread->loop_);
    uint64_t count = 0;
    [[maybe_unused]] const ssize_t n = ::read(fd, &count, sizeof count);
    thread->drain();
}

void IoThread::drain() {
    {
        std::lock_guard lock(mutex_);
        running_.swap(tasks_);
    }
    for (Task& task : running_) task();
    running_.clear();
    if (on_wake_) on_wake_();
}

}  // namespace mdcast::sdk
