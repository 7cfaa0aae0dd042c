// mdcast::Consumer: the application-facing front end. Validates requests on
// the caller's thread, hands them to the ConsumerCore on the I/O thread, and
// delivers events either there or through the dispatch queue.
//
// The I/O thread is the Consumer's own (an IoThread whose loop lives and dies
// with it) or, with ConsumerOptions::io_context, an IoContext's shared one: the
// core is then built on the running shared loop by start() and taken off it
// by stop(), which waits until it is gone, and the loop runs on for the other
// Consumers.
#include "mdcast/consumer.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <unordered_set>

#include "consumer_core.h"
#include "event_queue.h"
#include "io_thread.h"
#include "post_fields.h"
#include "proto/limits.h"
#include "sdk_log.h"
#include "sdk_options.h"
#include "shared_loop.h"

namespace mdcast {

using sdk::ConsumerCore;
using sdk::EventQueue;
using sdk::SubscribeRequest;

// Hidden: only Consumer's own members are the library's interface.
struct __attribute__((visibility("hidden"))) Consumer::Impl {
    class DirectSink;
    class QueueSink;
    struct Running;

    Impl(ConsumerOptions o, ConsumerHandler& h);
    void start();
    void stop();
    std::vector<ItemHandle> request(const std::string& service,
                                    const std::vector<std::string>& items, const View& view,
                                    bool snapshot, uint32_t conflate_ms = 0);
    std::vector<uint32_t> resolve_view(const View& view) const;
    void post(ItemHandle handle, wire::v1::Post post, const FieldList& fields, sdk::PostDone done);
    sdk::PostDone guarded(PostCallback on_answer);
    void deliver(const Event& event);
    void on_finished(ItemHandle handle);
    // True when `handle` was unsubscribed and the core has not let go of it yet.
    // Inline: asked for every event, and nearly always nothing is cancelled.
    bool cancelled(ItemHandle handle) {
        return cancelled_count.load(std::memory_order_acquire) != 0 && cancelled_now(handle);
    }
    bool cancelled_now(ItemHandle handle);
    void run_io_thread();
    void open_on_shared_loop();
    void close_on_shared_loop();

    ConsumerOptions options;
    std::shared_ptr<const TlsContext> tls;  // built once from options.tls
    ConsumerHandler& handler;
    std::shared_ptr<spdlog::logger> log;
    sdk::ConsumerCounters counters;
    sdk::ClientThread thread;           // its own, or options.io_context's shared one
    std::unique_ptr<EventQueue> queue;  // kDispatch only
    ConsumerCore* core = nullptr;       // I/O thread only
    std::unique_ptr<Running> running;   // shared loop: I/O thread only

    std::mutex mutex;  // guards what follows
    uint64_t next_handle = 1;
    std::unordered_map<std::string, uint64_t> streaming;  // service '\0' item -> handle
    std::unordered_map<uint64_t, std::string> streaming_keys;
    std::unordered_set<uint64_t> cancelled_handles;  // kIoThread: until the core lets go
    std::atomic<size_t> cancelled_count{0};
    std::atomic<uint64_t> next_post_id{1};
};

// kIoThread: one reused event, handed to the handler at once.
class Consumer::Impl::DirectSink final : public sdk::EventSink {
  public:
    explicit DirectSink(Impl& impl) : impl_(impl) {}
    Event* acquire(ItemHandle handle) override {
        return handle && impl_.cancelled(handle) ? nullptr : &event_;
    }
    bool delivers_at_once() const override { return true; }
    void commit() override {
        try {
            impl_.deliver(event_);
        } catch (const std::exception& e) {
            impl_.log->error("handler threw on a {} event: {}", event_type_name(event_.type()),
                             e.what());
        } catch (...) {
            impl_.log->error("handler threw on a {} event", event_type_name(event_.type()));
        }
    }

  private:
    Impl& impl_;
    Event event_;
};

// kDispatch: events go into the queue; the dispatching thread is woken once
// per loop iteration (after everything read in it), not once per event.
class Consumer::Impl::QueueSink final : public sdk::EventSink {
  public:
    QueueSink(EventQueue& queue, EventLoop& loop)
        : queue_(queue), wake_(loop, [&queue] { queue.wake(); }) {}
    Event* acquire(ItemHandle handle) override { return queue_.acquire(handle); }
    bool delivers_at_once() const override { return false; }
    void commit() override {
        queue_.commit(false);
        wake_.fire();
    }

  private:
    EventQueue& queue_;
    Trigger wake_;
};

// What lives on the I/O thread while the consumer runs: its sinks and core.
struct Consumer::Impl::Running {
    Running(Impl& impl, EventLoop& loop, std::function<void()> stop_loop)
        : direct(impl),
          queued(impl.queue ? std::make_unique<QueueSink>(*impl.queue, loop) : nullptr),
          core(
              loop, impl.options, queued ? static_cast<sdk::EventSink&>(*queued) : direct,
              impl.counters, [&impl](ItemHandle handle) { impl.on_finished(handle); },
              std::move(stop_loop), impl.tls) {}
    DirectSink direct;
    std::unique_ptr<QueueSink> queued;
    ConsumerCore core;
};

Consumer::Impl::Impl(ConsumerOptions o, ConsumerHandler& h)
    : options(std::move(o)), handler(h), thread(options.io_context, "Consumer") {
    sdk::validate(options);
    log = sdk::logger("sdk.consumer", options.log_level);
    tls = sdk::tls_context(options);
    if (!options.dictionary) options.dictionary = Dictionary::load_installed();
    if (options.delivery == ConsumerOptions::Delivery::kDispatch) {
        queue = std::make_unique<EventQueue>(options.max_queued_events);
    }
}

// Own thread: the loop lives as long as the core.
void Consumer::Impl::run_io_thread() {
    EventLoop loop(EventLoop::Timers::kCoarse);  // its timers are all in ms
    Running on_loop(*this, loop, [this] { thread.io().stop_loop(); });
    core = &on_loop.core;
    core->start();
    thread.io().run(loop);
    core = nullptr;
}

// Shared loop, on its thread: the core joins the running loop. The core must
// not stop the loop when it stops: the other Consumers still use it.
void Consumer::Impl::open_on_shared_loop() {
    running = std::make_unique<Running>(*this, thread.shared()->loop(), [] {});
    core = &running->core;
    thread.shared()->consumers().fetch_add(1, std::memory_order_relaxed);
    core->start();
}

// Shared loop, on its thread: the core closes its connection, says kStopped,
// and its events, timers and socket leave the loop with it.
void Consumer::Impl::close_on_shared_loop() {
    if (!running) return;
    core->stop();
    core = nullptr;
    running.reset();
    thread.shared()->consumers().fetch_sub(1, std::memory_order_relaxed);
}

void Consumer::Impl::start() {
    thread.start([this] { open_on_shared_loop(); }, [this] { run_io_thread(); });
}

void Consumer::Impl::stop() {
    thread.stop(
        [this] {
            close_on_shared_loop();
            thread.closed();
        },
        [this] {
            if (core) core->stop();
        },
        [this] {
            if (queue) queue->release_waiters();  // the I/O thread may wait for room in our queue
        });
}

namespace {

// One more on a counter only the delivering thread writes (the I/O thread, or
// the one thread dispatching at a time, after the queue's lock): a load and a
// store, not a locked read-modify-write, which on x86 is a full barrier per
// event. Readers (stats()) load it relaxed, as before.
void count_one(std::atomic<uint64_t>& counter) {
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

}  // namespace

void Consumer::Impl::deliver(const Event& event) {
    switch (event.type()) {
        case EventType::kRefresh:
            count_one(counters.refreshes);
            return handler.on_refresh(event);
        case EventType::kUpdate:
            count_one(counters.updates);
            return handler.on_update(event);
        case EventType::kStatus:
            count_one(counters.statuses);
            return handler.on_status(event);
        case EventType::kConnection:
            return handler.on_connection(event);
        case EventType::kDirectory:
            return handler.on_directory(event);
    }
}

bool Consumer::Impl::cancelled_now(ItemHandle handle) {
    std::lock_guard lock(mutex);
    return cancelled_handles.count(handle.id) != 0;
}

// I/O thread: the core will produce nothing more for `handle`.
void Consumer::Impl::on_finished(ItemHandle handle) {
    std::lock_guard lock(mutex);
    const auto key = streaming_keys.find(handle.id);
    if (key != streaming_keys.end()) {
        const auto name = streaming.find(key->second);
        if (name != streaming.end() && name->second == handle.id) streaming.erase(name);
        streaming_keys.erase(key);
    }
    if (queue) {
        queue->forget(handle);
    } else if (cancelled_handles.erase(handle.id) > 0) {
        cancelled_count.fetch_sub(1, std::memory_order_release);
    }
}

std::vector<uint32_t> Consumer::Impl::resolve_view(const View& view) const {
    std::vector<uint32_t> ids = view.field_ids;
    if (!view.field_names.empty() && !options.dictionary) {
        throw std::invalid_argument(
            "a view by field names needs a dictionary: none is installed beside libmdcast; set "
            "ConsumerOptions::dictionary or MDCAST_DICTIONARY");
    }
    for (const auto& name : view.field_names) ids.push_back(options.dictionary->require_id(name));
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
}

std::vector<ItemHandle> Consumer::Impl::request(const std::string& service,
                                                const std::vector<std::string>& items,
                                                const View& view, bool snapshot,
                                                uint32_t conflate_ms) {
    if (service.empty()) throw std::invalid_argument("empty service name");
    sdk::require_name_fits(service, proto::kMaxServiceNameBytes, "service name");
    if (items.empty()) throw std::invalid_argument("no item names");
    if (conflate_ms > Consumer::kMaxConflateMs) {
        throw std::invalid_argument("conflate_ms " + std::to_string(conflate_ms) +
                                    " is above the limit of " +
                                    std::to_string(Consumer::kMaxConflateMs));
    }
    SubscribeRequest request;
    request.service = service;
    request.items = items;
    request.snapshot = snapshot;
    request.view = resolve_view(view);
    request.conflate_ms = conflate_ms;
    {
        std::lock_guard lock(mutex);
        std::unordered_set<std::string> batch;
        for (const auto& item : items) {
            if (item.empty()) throw std::invalid_argument("empty item name in " + service);
            sdk::require_name_fits(item, proto::kMaxItemNameBytes, "item name");
            const std::string key = service + '\0' + item;
            if (!snapshot && (streaming.count(key) || !batch.insert(key).second)) {
                throw std::invalid_argument(service + "/" + item +
                                            " is already subscribed by this consumer");
            }
        }
        for (const auto& item : items) {
            const ItemHandle handle{next_handle++};
            request.handles.push_back(handle);
            if (snapshot) continue;
            const std::string key = service + '\0' + item;
            streaming[key] = handle.id;
            streaming_keys[handle.id] = key;
        }
    }
    std::vector<ItemHandle> handles = request.handles;
    thread.post([this, request = std::move(request)] {
        if (core) core->subscribe(request);
    });
    return handles;
}

Consumer::Consumer(ConsumerOptions options, ConsumerHandler& handler)
    : impl_(std::make_unique<Impl>(std::move(options), handler)) {}

Consumer::~Consumer() {
    try {
        stop();
    } catch (const std::exception& e) {
        impl_->thread.destroyed_badly(e.what());
        impl_->log->error("consumer destroyed badly: {}", e.what());
    }
}

void Consumer::start() {
    impl_->start();
}

void Consumer::stop() {
    impl_->stop();
}

ItemHandle Consumer::subscribe(const std::string& service, const std::string& item,
                               const View& view, uint32_t conflate_ms) {
    return impl_->request(service, {item}, view, false, conflate_ms).front();
}

std::vector<ItemHandle> Consumer::subscribe_batch(const std::string& service,
                                                  const std::vector<std::string>& items,
                                                  const View& view, uint32_t conflate_ms) {
    return impl_->request(service, items, view, false, conflate_ms);
}

ItemHandle Consumer::snapshot(const std::string& service, const std::string& item,
                              const View& view) {
    return impl_->request(service, {item}, view, true).front();
}

std::vector<ItemHandle> Consumer::snapshot_batch(const std::string& service,
                                                 const std::vector<std::string>& items,
                                                 const View& view) {
    return impl_->request(service, items, view, true);
}

void Consumer::unsubscribe(ItemHandle handle) {
    if (!handle) return;
    {
        std::lock_guard lock(impl_->mutex);
        const auto key = impl_->streaming_keys.find(handle.id);
        if (key != impl_->streaming_keys.end()) {
            impl_->streaming.erase(key->second);
            impl_->streaming_keys.erase(key);
        }
        if (!impl_->queue && impl_->cancelled_handles.insert(handle.id).second) {
            impl_->cancelled_count.fetch_add(1, std::memory_order_release);
        }
    }
    if (impl_->queue) impl_->queue->cancel(handle);
    impl_->thread.post([impl = impl_.get(), handle] {
        if (impl->core) impl->core->unsubscribe(handle);
    });
}

void Consumer::request_directory() {
    impl_->thread.post([impl = impl_.get()] {
        if (impl->core) impl->core->request_directory();
    });
}

size_t Consumer::dispatch(std::chrono::milliseconds timeout, size_t max_events) {
    if (!impl_->queue) {
        throw std::logic_error("dispatch() needs ConsumerOptions::delivery = Delivery::kDispatch");
    }
    return impl_->queue->dispatch(
        timeout, max_events, [impl = impl_.get()](const Event& event) { impl->deliver(event); });
}

namespace {

wire::v1::Post on_stream(ItemHandle handle) {
    if (!handle) throw std::invalid_argument("post: no item handle");
    return {};
}

wire::v1::Post off_stream(const std::string& service, const std::string& item) {
    if (!proto::valid_service_name(service) || !proto::valid_item_name(item))
        throw std::invalid_argument("post: service and item names must not be empty or too long");
    wire::v1::Post post;
    post.set_service_name(service);
    post.set_item_name(item);
    return post;
}

// A future and the completion that fulfils it.
std::pair<std::future<PostResult>, sdk::PostDone> promised() {
    auto promise = std::make_shared<std::promise<PostResult>>();
    std::future<PostResult> answer = promise->get_future();
    return {std::move(answer),
            [promise](PostResult result) { promise->set_value(std::move(result)); }};
}

}  // namespace

std::future<PostResult> Consumer::post(ItemHandle handle, const FieldList& fields) {
    auto [answer, done] = promised();
    impl_->post(handle, on_stream(handle), fields, std::move(done));
    return std::move(answer);
}

std::future<PostResult> Consumer::post(const std::string& service, const std::string& item,
                                       const FieldList& fields) {
    auto [answer, done] = promised();
    impl_->post({}, off_stream(service, item), fields, std::move(done));
    return std::move(answer);
}

void Consumer::post(ItemHandle handle, const FieldList& fields, PostCallback on_answer) {
    impl_->post(handle, on_stream(handle), fields, impl_->guarded(std::move(on_answer)));
}

void Consumer::post(const std::string& service, const std::string& item, const FieldList& fields,
                    PostCallback on_answer) {
    impl_->post({}, off_stream(service, item), fields, impl_->guarded(std::move(on_answer)));
}

// The application's callback; what it throws is logged, never thrown into the I/O thread.
sdk::PostDone Consumer::Impl::guarded(PostCallback on_answer) {
    if (!on_answer) throw std::invalid_argument("post: no callback");
    return [this, on_answer = std::move(on_answer)](PostResult result) {
        try {
            on_answer(result);
        } catch (const std::exception& e) {
            log->error("post callback threw: {}", e.what());
        } catch (...) {
            log->error("post callback threw");
        }
    };
}

// The post is built on the caller's thread (the fields copied) and sent by the core.
void Consumer::Impl::post(ItemHandle handle, wire::v1::Post post, const FieldList& fields,
                          sdk::PostDone done) {
    if (fields.empty() || fields.size() > proto::kMaxPostFields)
        throw std::invalid_argument("post: between 1 and " + std::to_string(proto::kMaxPostFields) +
                                    " fields");
    post.set_post_id(next_post_id.fetch_add(1, std::memory_order_relaxed));
    sdk::to_wire_fields(fields.values(), *post.mutable_fields());
    thread.post([this, handle, post = std::move(post), done = std::move(done)]() mutable {
        if (core) return core->post(handle, post, std::move(done));
        sdk::ConsumerPosts::refuse(done, post.post_id(), StatusCode::kCancelled,
                                   "the consumer is not running");
    });
}

ConsumerStats Consumer::stats() const {
    const auto& c = impl_->counters;
    ConsumerStats s;
    s.refreshes = c.refreshes.load(std::memory_order_relaxed);
    s.updates = c.updates.load(std::memory_order_relaxed);
    s.statuses = c.statuses.load(std::memory_order_relaxed);
    s.group_statuses = c.group_statuses.load(std::memory_order_relaxed);
    s.duplicates_dropped = c.duplicates_dropped.load(std::memory_order_relaxed);
    s.catch_ups = c.catch_ups.load(std::memory_order_relaxed);
    s.connections = c.connections.load(std::memory_order_relaxed);
    s.connection_losses = c.connection_losses.load(std::memory_order_relaxed);
    s.posts_sent = c.posts_sent.load(std::memory_order_relaxed);
    s.posts_accepted = c.posts_accepted.load(std::memory_order_relaxed);
    if (impl_->queue) {
        s.queue_full_waits = impl_->queue->full_waits();
        s.queued_events = impl_->queue->size();
    }
    return s;
}

}  // namespace mdcast
