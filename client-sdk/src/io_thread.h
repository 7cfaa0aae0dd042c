// The SDK's I/O thread: one thread, one event loop, and a way for other
// threads to hand it work.
//
// Tasks posted from any thread run on the loop thread in the order posted.
// wake() runs the wake handler without allocating (the publisher's outbox
// uses it on every publish). Everything else on the loop belongs to the loop
// thread alone.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/net/event_loop.h"

struct event;

namespace mdcast::sdk {

class IoThread {
  public:
    using Task = std::function<void()>;

    IoThread();
    ~IoThread();
    IoThread(const IoThread&) = delete;
    IoThread& operator=(const IoThread&) = delete;

    // Starts the thread; `main` builds the loop's components on it and calls
    // run(loop), which returns after stop_loop(). Once per IoThread: a second
    // call throws std::logic_error.
    void start(std::function<void()> main);
    // Owner's thread: posts `stop` (which must end in stop_loop()), calls
    // `unblock` (to wake the I/O thread if it may be waiting on the owner),
    // and waits for the thread to end. Once: later calls, and calls before
    // start(), do nothing. Throws std::logic_error on the I/O thread itself.
    void shutdown(Task stop, const Task& unblock = {});
    bool on_io_thread() const { return std::this_thread::get_id() == io_id_.load(); }

    // Any thread. Tasks posted before start() run when the loop starts; tasks
    // posted after the loop ended never run.
    void post(Task task);
    void wake();

    // I/O thread only.
    void run(EventLoop& loop, Task on_wake = {});
    void stop_loop();

  private:
    static void on_readable(int, short, void* self);
    void drain();

    void join();

    int wake_fd_;
    std::mutex lifecycle_mutex_;
    bool launched_ = false;
    bool shut_down_ = false;
    std::thread thread_;
    std::atomic<std::thread::id> io_id_{};
    std::mutex mutex_;
    std::vector<Task> tasks_;
    std::vector<Task> running_;
    Task on_wake_;
    EventLoop* loop_ = nullptr;
};

}  // namespace mdcast::sdk
