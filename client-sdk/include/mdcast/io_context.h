// mdcast::IoContext — one I/O thread that several Consumers (and Publishers)
// share.
//
// By default every Consumer runs its own I/O thread. An application with
// many Consumers in one process (one per server group, per desk, per
// strategy) pays for that in wake-ups: each server write wakes each thread,
// and on a busy core the switches between them cost more than the work. An
// IoContext is one I/O thread with one event loop; every Consumer given it in
// ConsumerOptions::io_context (and every Publisher given it in
// PublisherOptions::io_context) runs there, each with its own connection,
// failover, subscriptions or items, handler, stats and lifecycle.
//
//     auto io = std::make_shared<mdcast::IoContext>();
//     mdcast::ConsumerOptions options;
//     options.servers = {{"127.0.0.1", 14002}};
//     options.io_context = io;
//     mdcast::Consumer a(options, handler_a), b(options, handler_b);
//     a.start();
//     b.start();
//
// THREADING
//   The constructor starts the thread; it runs until the IoContext is
//   destroyed. Consumers and Publishers hold a std::shared_ptr to it, so it
//   outlives every one that uses it whatever order the application drops its
//   own references in: the thread ends when the last owner lets go.
//   * Delivery::kIoThread handlers of every Consumer on the context run on
//     its one thread, one at a time: a slow handler delays every Consumer on
//     it, not only its own. Handlers of Consumers on one context never run
//     concurrently with each other. The same holds for PublisherHandler
//     callbacks of Publishers on it.
//   * Delivery::kDispatch Consumers keep their own queues and dispatch()
//     threads; but a full queue makes the shared thread wait for room (the
//     back-pressure of ConsumerOptions::max_queued_events), which stalls
//     every Consumer on the context until that queue's application
//     dispatches. Give a Consumer whose application may fall behind its own
//     context (or none).
//   * start() and stop() of one Consumer or Publisher do not disturb the
//     others: stop() closes its connection (a Publisher first sends what its
//     outbox holds, as without a context) and removes its work from the loop,
//     then returns; the others keep their connections and events.
//   * stop() (and so the destructor) of a Consumer or Publisher on a context
//     must not be called on the context's thread, i.e. from inside any handler
//     or callback of anything on it: stop() throws std::logic_error there; a
//     started one destroyed there aborts the process with a message (it cannot
//     be taken off the loop it is running on). Destroying the last reference to
//     an IoContext on its own thread also aborts with a message (a thread
//     cannot join itself).
#pragma once

#include <cstddef>
#include <memory>

#include "mdcast/export.h"

namespace mdcast {

namespace sdk {
struct IoContextAccess;
}

class MDCAST_API IoContext {
  public:
    // Starts the I/O thread. Throws std::runtime_error when it cannot (no
    // eventfd, no thread).
    IoContext();
    // Stops the loop and joins the thread. Runs only after every Consumer and
    // Publisher on the context is gone (they own it too); see THREADING for
    // the misuse that aborts.
    ~IoContext();
    IoContext(const IoContext&) = delete;
    IoContext& operator=(const IoContext&) = delete;

    // Consumers (Publishers) started on this context and not yet stopped; any
    // thread.
    size_t consumers() const;
    size_t publishers() const;
    // True on the context's thread (inside a handler of a Consumer on it).
    bool on_io_thread() const;

  private:
    struct Impl;
    friend struct sdk::IoContextAccess;
    std::unique_ptr<Impl> impl_;
};

}  // namespace mdcast
