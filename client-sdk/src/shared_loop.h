// The thread and event loop behind a public mdcast::IoContext, and the seat a
// Consumer or Publisher takes on it.
//
// SharedLoop: one IoThread whose loop runs until the context is destroyed.
// Unlike a Consumer's or Publisher's own IoThread, nothing that runs on it may
// stop its loop: a client leaving takes its own work off the loop and leaves
// the loop running for the others.
//
// SharedSeat: one client's lifecycle on a SharedLoop. start() posts the task
// that builds the client's core on the running loop; requests posted before
// it are held until then (a task posted earlier would find no core) and
// requests posted after stop() are dropped (the core is gone); stop() starts
// the close on the loop and waits until the loop reports it finished.
//
// ClientThread: what a Consumer or Publisher front end holds: its own IoThread,
// or a seat on the shared loop of the IoContext it was given.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "io_thread.h"
#include "mdcast/io_context.h"

namespace mdcast::sdk {

class SharedLoop {
  public:
    // Starts the thread and its loop.
    SharedLoop();
    // Stops the loop and joins the thread; aborts with a message when called
    // on the thread itself (it cannot join itself).
    ~SharedLoop();
    SharedLoop(const SharedLoop&) = delete;
    SharedLoop& operator=(const SharedLoop&) = delete;

    IoThread& thread() { return thread_; }
    bool on_io_thread() const { return thread_.on_io_thread(); }
    // I/O thread only: the loop, valid while the thread runs.
    EventLoop& loop() { return *loop_; }

    // I/O thread only. `on_wake` runs after every wake-up of the loop: a
    // Publisher's wake() is the shared IoThread's, so each Publisher on the
    // loop looks at its own outbox then.
    void add_wake_handler(const void* owner, std::function<void()> on_wake);
    void remove_wake_handler(const void* owner);

    std::atomic<size_t>& consumers() { return consumers_; }
    std::atomic<size_t>& publishers() { return publishers_; }
    size_t consumers() const { return consumers_.load(std::memory_order_relaxed); }
    size_t publishers() const { return publishers_.load(std::memory_order_relaxed); }

  private:
    IoThread thread_;
    EventLoop* loop_ = nullptr;                                                 // I/O thread only
    std::vector<std::pair<const void*, std::function<void()>>> wake_handlers_;  // I/O thread only
    std::atomic<size_t> consumers_{0};
    std::atomic<size_t> publishers_{0};
};

class SharedSeat {
  public:
    using Task = IoThread::Task;

    // `what` names the client in errors ("Consumer", "Publisher").
    SharedSeat(SharedLoop& loop, std::string what) : loop_(loop), what_(std::move(what)) {}

    // Any thread: `task` runs on the loop after the open task, in order.
    void post(Task task);
    // Owner's thread: posts `open` (it builds the core on the loop), then the
    // tasks held since. Throws std::logic_error when called twice.
    void start(Task open);
    // Owner's thread: does nothing unless started and not yet stopped.
    // Otherwise posts `begin_close`, calls `unblock` (for a loop that may be
    // waiting on the owner), and waits until closed() is called on the loop:
    // at once by begin_close, or later by what it set going. Throws
    // std::logic_error on the loop's own thread (the wait would never end).
    void stop(Task begin_close, const std::function<void()>& unblock = {});
    // Loop thread: the client is off the loop; stop() returns.
    void closed();
    // For a destructor whose stop() threw: a started client cannot leave the
    // loop it is running on, and freeing it there would leave freed code on
    // the loop, so the process stops with a message.
    [[noreturn]] void die(const std::string& why) const;

  private:
    enum class Phase : uint8_t { kNew, kStarted, kStopped };
    SharedLoop& loop_;
    std::string what_;
    std::mutex mutex_;  // guards what follows
    Phase phase_ = Phase::kNew;
    std::vector<Task> before_start_;
    // Shared with the task that sets it: set_value() may still be returning
    // when stop()'s wait() does.
    std::shared_ptr<std::promise<void>> closed_;
};

// The front ends' way in to an IoContext's loop.
struct IoContextAccess {
    static SharedLoop& shared(IoContext& context);
};

// The I/O thread a Consumer or Publisher runs on: an IoThread of its own, or
// the shared loop of the IoContext it was given, where it takes a seat. The
// front ends say what to do in each case; this chooses.
class ClientThread {
  public:
    using Task = IoThread::Task;

    // `context` null: a thread of its own. `what` names the client in errors.
    ClientThread(const std::shared_ptr<IoContext>& context, const char* what);

    SharedLoop* shared() const { return shared_; }  // null: a thread of its own
    IoThread& io() { return io_; }                  // the own or the shared thread

    // Any thread: `task` runs on the I/O thread once the client is open there.
    void post(Task task);
    // Owner's thread: `open_shared` joins the shared loop; `run_own` is the own
    // thread's body (it builds the loop and runs it).
    void start(Task open_shared, std::function<void()> run_own);
    // Owner's thread, waits: `close_shared` starts the leave from the shared
    // loop and ends in closed() (now or later); `stop_own` stops the own loop.
    void stop(Task close_shared, Task stop_own, const std::function<void()>& unblock = {});
    // Shared loop only: the client has left it; stop() returns.
    void closed() { seat_->closed(); }
    // A destructor whose stop() threw: on a shared loop the process stops with
    // a message (SharedSeat::die); an own thread only logs it.
    void destroyed_badly(const std::string& why) const {
        if (seat_) seat_->die(why);
    }

  private:
    SharedLoop* shared_;
    std::unique_ptr<IoThread> own_;
    IoThread& io_;
    std::unique_ptr<SharedSeat> seat_;
};

}  // namespace mdcast::sdk
