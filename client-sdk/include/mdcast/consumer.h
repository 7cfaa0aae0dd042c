// mdcast::Consumer — subscribe to items on mdcast servers and receive their
// images, updates and states, with automatic failover.
//
// THREADING
//   A Consumer runs its network I/O on its own thread (the "I/O thread", one
//   libevent loop), started by start() and joined by stop(). Given an
//   IoContext in ConsumerOptions::io_context, it runs instead on that
//   context's one thread, shared with every other Consumer given the same
//   context (mdcast/io_context.h): start() joins the running loop and stop()
//   leaves it, the other Consumers undisturbed. Many Consumers in one process
//   then cost one thread and one wake-up per loop pass, not one per Consumer.
//   * Delivery::kIoThread (default): the handler is called on the I/O thread.
//     Keep handlers short; a slow handler delays reading from the server
//     (on a shared IoContext: from every server of every Consumer on it).
//   * Delivery::kDispatch: events wait in a bounded queue; the application
//     calls dispatch(timeout) on a thread of its choice, and the handler runs
//     there. Only one thread may dispatch at a time.
//   The handler is never called concurrently with itself.
//
//   Safe from any thread, also from inside a handler: subscribe(),
//   subscribe_batch(), snapshot(), snapshot_batch(), unsubscribe(),
//   request_directory(), stats(). They queue a request for the
//   I/O thread and return at once (they never wait for the network).
//   start() and stop() must be called from the thread that owns the Consumer,
//   never from inside a handler (stop() throws std::logic_error there; on a
//   shared IoContext, inside a handler of any Consumer on that context).
//   dispatch() is for kDispatch only, from one thread at a time.
//
//   After unsubscribe(h) returns on the dispatching thread (kDispatch) or on
//   the I/O thread (kIoThread, i.e. inside a handler), no further event for h
//   is delivered. Called from another thread, an event for h may already be
//   in the handler at that moment; none starts afterwards.
//
// FAILOVER
//   `servers` is tried in order. When the connection is lost (socket closed,
//   nothing heard for heartbeat_timeout_ms, or the server closes with reason
//   `shutdown`), every open item gets a kStatus event at once (open/suspect,
//   kConnectionLost or kServerShutdown), the Consumer connects to the next
//   server (the first attempt immediately, then with exponential back-off and
//   jitter between reconnect_delay_min_ms and reconnect_delay_max_ms), logs in,
//   subscribes everything again and delivers a fresh image per item. Per-item
//   sequence numbers make sure no update is delivered twice or out of order
//   across the switch: when the new server's image is older than what was
//   delivered, it is brought up to date with that server's updates before it
//   is delivered (for at most catch_up_timeout_ms).
//
// BOUNDS
//   kDispatch: the queue holds at most max_queued_events; when it is full the
//   I/O thread waits for dispatch() to make room and stops reading meanwhile,
//   so the server sees back-pressure (and applies its slow-consumer policy if
//   the application never catches up).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "mdcast/dictionary.h"
#include "mdcast/event.h"
#include "mdcast/export.h"
#include "mdcast/io_context.h"
#include "mdcast/log.h"
#include "mdcast/types.h"

namespace mdcast {

struct ConsumerOptions : ConnectionOptions {
    std::vector<ServerAddress> servers;  // failover order; at least one

    enum class Delivery : uint8_t { kIoThread, kDispatch };
    Delivery delivery = Delivery::kIoThread;
    size_t max_queued_events = 65536;  // kDispatch queue bound

    // How long an image older than what was delivered may wait for the new
    // server's updates to bring it level after a failover.
    uint32_t catch_up_timeout_ms = 2000;
    uint32_t max_frame_bytes = 16u << 20;   // larger frames from the server close it
    uint64_t max_output_bytes = 16u << 20;  // requests queued towards the server

    // Idle strategy of the I/O thread, for a core of its own. 0 (default): it
    // sleeps in epoll as soon as nothing is ready. N > 0 (at most 1,000,000):
    // after every frame from the server it keeps polling without sleeping for
    // N µs, so the next update is read without a kernel wake-up; a core stays
    // busy while traffic flows, none while it is idle. On a shared IoContext
    // it keeps the whole context's thread polling.
    uint32_t busy_poll_us = 0;

    // Resolves View::field_names and Event::field(name); when null, the
    // constructor loads Dictionary::load_installed() (which may find none).
    std::shared_ptr<const Dictionary> dictionary;

    // Null (default): the Consumer runs its own I/O thread. Set: it runs on
    // this context's thread, shared with the other Consumers given it; the
    // Consumer keeps the context alive (see THREADING and io_context.h).
    std::shared_ptr<IoContext> io_context;
};

// The fields a subscription wants; empty means all. Names need a dictionary.
// Initialised members, so {.field_names = {"BID", "ASK"}} draws no
// -Wmissing-field-initializers warning.
struct View {
    std::vector<uint32_t> field_ids{};
    std::vector<std::string> field_names{};
    bool empty() const { return field_ids.empty() && field_names.empty(); }
};

// Receives events; see THREADING above for where the calls happen. The Event
// is valid only during the call.
class ConsumerHandler {
  public:
    virtual ~ConsumerHandler() = default;
    virtual void on_refresh(const Event&) {}
    virtual void on_update(const Event&) {}
    virtual void on_status(const Event&) {}
    virtual void on_connection(const Event&) {}
    virtual void on_directory(const Event&) {}
};

// Counters since start(); safe to read from any thread.
struct ConsumerStats {
    uint64_t refreshes = 0;  // delivered to the handler
    uint64_t updates = 0;
    uint64_t statuses = 0;
    uint64_t group_statuses = 0;  // group frames received (each delivered as its items' statuses)
    uint64_t duplicates_dropped = 0;  // updates not newer than what was delivered
    uint64_t catch_ups = 0;           // images brought up to date after a failover
    uint64_t connections = 0;         // successful logins
    uint64_t connection_losses = 0;
    uint64_t queue_full_waits = 0;  // kDispatch: times the I/O thread waited for room
    uint64_t queued_events = 0;     // kDispatch: waiting now
};

class MDCAST_API Consumer {
  public:
    // Throws std::invalid_argument when the options cannot work (no servers,
    // zero timeouts, ...). Nothing connects before start().
    Consumer(ConsumerOptions options, ConsumerHandler& handler);
    // Stops (see stop()) if still running.
    ~Consumer();
    Consumer(const Consumer&) = delete;
    Consumer& operator=(const Consumer&) = delete;

    // Starts the I/O thread, which connects to the first server.
    void start();
    // Closes the connection, delivers a kConnection/kStopped event (kIoThread;
    // with kDispatch it is queued) and joins the I/O thread. Subscriptions
    // are forgotten. Idempotent.
    void stop();

    // Streaming subscription to ONE item: a refresh, then every update in
    // order, plus status events. May be called before start(). Throws
    // std::invalid_argument for empty names, an unknown view name, or an item
    // this consumer already streams (unsubscribe it first).
    // conflate_ms > 0: the server sends at most one update of the item every
    // conflate_ms milliseconds, the updates in between merged into it
    // (Event::conflated() true, the latest values); statuses are not delayed.
    // At most kMaxConflateMs (std::invalid_argument above it).
    ItemHandle subscribe(const std::string& service, const std::string& item, const View& view = {},
                         uint32_t conflate_ms = 0);
    // Many items in one request; one handle per item, in the order given.
    // Same rules as subscribe().
    std::vector<ItemHandle> subscribe_batch(const std::string& service,
                                            const std::vector<std::string>& items,
                                            const View& view = {}, uint32_t conflate_ms = 0);
    static constexpr uint32_t kMaxConflateMs = 60'000;  // the server's limit too
    // ONE refresh (Event::snapshot() true), then the handle is finished.
    ItemHandle snapshot(const std::string& service, const std::string& item, const View& view = {});
    std::vector<ItemHandle> snapshot_batch(const std::string& service,
                                           const std::vector<std::string>& items,
                                           const View& view = {});

    // A braced list of item names is a batch: call subscribe_batch() or
    // snapshot_batch(). Without these, subscribe("S", {"A", "B"}) would compile
    // as std::string("A", "B") (an iterator pair) and read past "A".
    template <typename T>
    ItemHandle subscribe(const std::string&, std::initializer_list<T>, const View& = {},
                         uint32_t = 0) = delete;
    template <typename T>
    ItemHandle snapshot(const std::string&, std::initializer_list<T>, const View& = {}) = delete;

    void unsubscribe(ItemHandle handle);
    // The answer arrives as a kDirectory event.
    void request_directory();

    // kDispatch: runs the handler for queued events on the calling thread.
    // Waits up to `timeout` for the first one; returns how many were handled.
    size_t dispatch(std::chrono::milliseconds timeout, size_t max_events = 1024);

    ConsumerStats stats() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace mdcast
