// The thread and event loop behind a public mdcast::IoContext: one IoThread
// whose loop runs until the context is destroyed, on which several Consumers
// build their cores (consumer.cpp). Unlike a Consumer's own IoThread, nothing
// that runs on it may stop its loop: a Consumer leaving takes its own work
// off the loop and leaves the loop running for the others.
#pragma once

#include <atomic>
#include <cstddef>

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
    std::atomic<size_t>& consumers() { return consumers_; }
    size_t consumers() const { return consumers_.load(std::memory_order_relaxed); }

  private:
    IoThread thread_;
    EventLoop* loop_ = nullptr;  // I/O thread only
    std::atomic<size_t> consumers_{0};
};

// The Consumer front end's way in to an IoContext's loop.
struct IoContextAccess {
    static SharedLoop& shared(IoContext& context);
};

}  // namespace mdcast::sdk
