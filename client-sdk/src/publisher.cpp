// mdcast::Publisher: the application-facing front end. Hands out item
// handles, copies what is published into the outbox, and runs the
// PublisherCore on the I/O thread: its own, or with
// PublisherOptions::io_context an IoContext's shared one, where start() builds
// the core on the running loop and stop() waits until it has drained and left.
#include "mdcast/publisher.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "io_thread.h"
#include "proto/limits.h"
#include "proto/update_codec.h"
#include "publisher_core.h"
#include "publisher_fan.h"
#include "publisher_frame_limit.h"
#include "sdk_log.h"
#include "sdk_options.h"
#include "shared_loop.h"

namespace mdcast {

namespace {
constexpr uint32_t kStopDrainMs = 2000;

// Text the distributor and every client would refuse never enters the outbox
// or the item's image (it would be re-sent after every reconnect).
void require_utf8(std::string_view text, const std::string& what) {
    if (!proto::is_valid_utf8(text))
        throw std::invalid_argument(what + " is not valid UTF-8; nothing was published");
}

// On the hot path: the message is built only for text that fails.
void require_utf8(std::span<const FieldValue> fields, const ItemState& state) {
    for (const FieldValue& field : fields) {
        if (field.kind == FieldKind::kString && !proto::is_valid_utf8(field.text))
            require_utf8(field.text, "the string value of field " + std::to_string(field.id));
    }
    if (!state.text.empty()) require_utf8(state.text, "the status text");
}
}  // namespace

// Hidden: only Publisher's own members are the library's interface.
struct __attribute__((visibility("hidden"))) Publisher::Impl {
    Impl(PublisherOptions o, PublisherHandler& h)
        : options(std::move(o)),
          handler(h),
          outbox(options.max_queued_bytes),
          thread(options.io_context, "Publisher") {
        sdk::validate(options);
        log = sdk::logger("sdk.publisher", options.log_level);
        tls = sdk::tls_context(options);
        caller_writes =
            options.write_from_caller && !tls && !thread.shared() && !options.publish_to_all;
    }

    PublishedItem handle_for(const std::string& service, const std::string& item, bool& created);
    bool push(const sdk::OutboxRecord& record, std::span<const FieldValue> fields,
              std::string_view text1, std::string_view text2, bool bounded, bool may_defer = true,
              std::span<const uint8_t> map = {});
    [[noreturn]] void refuse_oversize(const sdk::OutboxRecord& record, size_t bytes);
    std::string name_of(uint64_t handle) const;
    bool publish(sdk::OutboxRecord::Kind kind, PublishedItem item, const ItemState& state,
                 std::span<const FieldValue> fields, uint64_t stamp, bool trade = false,
                 const BookChanges* book = nullptr, Domain domain = Domain::kMarketPrice);
    bool known(PublishedItem item) const {
        return item.id != 0 && item.id < next_handle.load(std::memory_order_acquire);
    }
    std::unique_ptr<sdk::PublisherWorker> make_core(EventLoop& loop,
                                                    std::function<void()> stop_loop);
    void wake_io_thread(bool coalesce);
    bool write_from_caller(bool coalesce);
    void run_io_thread();
    void open_on_shared_loop();
    void close_on_shared_loop();

    PublisherOptions options;
    std::shared_ptr<const TlsContext> tls;  // built once from options.tls
    PublisherHandler& handler;
    std::shared_ptr<spdlog::logger> log;
    sdk::PublisherCounters counters;
    sdk::PublisherOutbox outbox;
    sdk::ClientThread thread;  // its own, or options.io_context's shared one
    // write_from_caller on a thread of its own, in plaintext: then the loop's
    // callback lock (EventLoop::set_callback_lock) is `core_lock`, and a
    // publishing thread holding it may work on the core and its connection.
    bool caller_writes = false;
    std::recursive_mutex core_lock;
    sdk::PublisherWorker* core = nullptr;  // I/O thread; with caller_writes, under core_lock
    std::unique_ptr<sdk::PublisherWorker> running;  // shared loop: I/O thread only

    // flush(): tokens handed out, and the highest the distributor acknowledged.
    std::atomic<uint64_t> flush_token{0};
    std::mutex flush_mutex;
    std::condition_variable flush_acked_cv;
    uint64_t flush_acked = 0;  // guarded by flush_mutex

    std::mutex mutex;  // guards what follows
    std::atomic<uint64_t> next_handle{1};
    std::unordered_map<std::string, uint64_t> handles;  // service '\0' item -> handle
    std::unordered_map<std::string, ServiceMode> services;
    mdcast::log::RateLimiter refusal_warnings;  // refuse_oversize's log line
};

PublishedItem Publisher::Impl::handle_for(const std::string& service, const std::string& item,
                                          bool& created) {
    std::lock_guard lock(mutex);
    auto& id = handles[service + '\0' + item];
    created = id == 0;
    if (created) id = next_handle.fetch_add(1, std::memory_order_acq_rel);
    return PublishedItem{id};
}

namespace {
// The innermost Publisher::Batch open on this thread (they link outwards).
thread_local Publisher::Batch* t_innermost_batch = nullptr;
}  // namespace

// Whether this thread holds a Batch of this publisher: then pushes defer the
// I/O thread's wake-up to the batch's end.
bool Publisher::in_batch(const Impl* impl) {
    for (const Batch* b = t_innermost_batch; b; b = b->outer_) {
        if (b->impl_ == impl) return true;
    }
    return false;
}

Publisher::Batch::Batch(Publisher& publisher)
    : impl_(publisher.impl_.get()), outer_(t_innermost_batch) {
    t_innermost_batch = this;
}

Publisher::Batch::~Batch() {
    t_innermost_batch = outer_;
    if (!in_batch(impl_) && impl_->outbox.wake_owed()) impl_->wake_io_thread(false);
}

// Where the I/O thread must look at the outbox: the publishing thread does
// its work instead when it can (write_from_caller), else wakes it. A batch's
// end writes at once; a plain update may `coalesce` with the next ones.
void Publisher::Impl::wake_io_thread(bool coalesce) {
    if (!write_from_caller(coalesce)) thread.io().wake();
}

// Never waits: the lock is taken only if free (the I/O thread is then asleep
// or busy elsewhere), and never on the I/O thread itself (a callback that
// publishes: the core may be in the middle of something).
bool Publisher::Impl::write_from_caller(bool coalesce) {
    if (!caller_writes || thread.io().on_io_thread()) return false;
    const std::unique_lock lock(core_lock, std::try_to_lock);
    return lock.owns_lock() && core && core->work_from_caller(coalesce);
}

bool Publisher::Impl::push(const sdk::OutboxRecord& record, std::span<const FieldValue> fields,
                           std::string_view text1, std::string_view text2, bool bounded,
                           bool may_defer, std::span<const uint8_t> map) {
    using Wake = sdk::PublisherOutbox::Wake;
    const Wake when = may_defer && in_batch(this) ? Wake::kDeferred : Wake::kNow;
    bool wake = false;
    const auto pushed = outbox.push(record, fields, text1, text2, bounded, when, wake, map);
    using Refusal = sdk::PublisherOutbox::Pushed::Refusal;
    if (pushed.refusal == Refusal::kTooLarge) refuse_oversize(record, pushed.frame_bytes);
    if (!pushed) {
        counters.outbox_full.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    if (wake) wake_io_thread(true);
    return true;
}

// A frame the distributor would close the connection for: refused at the call
// (counted, logged at most once a second, thrown), never kept in the image.
void Publisher::Impl::refuse_oversize(const sdk::OutboxRecord& record, size_t bytes) {
    counters.frames_refused.fetch_add(1, std::memory_order_relaxed);
    using Kind = sdk::OutboxRecord::Kind;
    const char* what = record.kind == Kind::kStatus   ? "status"
                       : record.kind == Kind::kUpdate ? (record.book ? "book update" : "update")
                       : record.book                  ? "book refresh"
                                                      : "refresh";
    const std::string text =
        sdk::frame_over_limit(what, bytes, outbox.max_frame_bytes()) + "; nothing was published";
    {
        std::lock_guard lock(mutex);
        uint64_t suppressed = 0;
        if (refusal_warnings.allow(suppressed)) {
            const std::string more =
                suppressed ? " (" + std::to_string(suppressed) + " more since the last such line)"
                           : "";
            log->error("item {}: {}{}", name_of(record.item), text, more);
        }
    }
    throw std::invalid_argument(text);
}

// "service/item" of a handle, for a log line (guarded by `mutex`).
std::string Publisher::Impl::name_of(uint64_t handle) const {
    for (const auto& [key, id] : handles) {
        if (id != handle) continue;
        std::string name = key;
        name[name.find('\0')] = '/';
        return name;
    }
    return "#" + std::to_string(handle);
}

// refresh(), update() and status(): one bounded record in the outbox.
bool Publisher::Impl::publish(sdk::OutboxRecord::Kind kind, PublishedItem item,
                              const ItemState& state, std::span<const FieldValue> fields,
                              uint64_t stamp, bool trade, const BookChanges* book, Domain domain) {
    if (!known(item)) return false;
    require_utf8(fields, state);
    sdk::OutboxRecord record;
    record.kind = kind;
    record.item = item.id;
    record.stamp = stamp;
    record.trade = trade;
    record.book = book != nullptr;
    record.domain = static_cast<uint8_t>(domain);
    record.stream = state.stream;
    record.data = state.data;
    record.code = state.code;
    return push(record, fields, state.text, {}, true, true,
                book ? book->bytes() : std::span<const uint8_t>{});
}

// `stop_loop` is called when the core has stopped (drained, or out of time).
// publish_to_all: a fan of cores, one per distributor (publisher_fan.h).
std::unique_ptr<sdk::PublisherWorker> Publisher::Impl::make_core(EventLoop& loop,
                                                                 std::function<void()> stop_loop) {
    auto handle = [this](const std::string& service, const std::string& item) {
        bool created = false;
        return handle_for(service, item, created);
    };
    auto flushed = [this](uint64_t token) {
        {
            std::lock_guard lock(flush_mutex);
            flush_acked = std::max(flush_acked, token);
        }
        flush_acked_cv.notify_all();
    };
    if (options.publish_to_all) {
        return std::make_unique<sdk::PublisherFan>(loop, options, handler, counters, outbox, handle,
                                                   std::move(stop_loop), tls, flushed);
    }
    return std::make_unique<sdk::PublisherCore>(loop, options, handler, counters, &outbox, handle,
                                                std::move(stop_loop), tls, flushed);
}

// Own thread: the loop lives as long as the core. With caller_writes every
// callback of the loop holds core_lock, and so do the core's start and end.
void Publisher::Impl::run_io_thread() {
    EventLoop loop(EventLoop::Timers::kCoarse);  // its timers are all in ms
    if (caller_writes) loop.set_callback_lock(&core_lock);
    std::unique_ptr<sdk::PublisherWorker> io_core;
    {
        const std::lock_guard lock(core_lock);
        io_core = make_core(loop, [this] { thread.io().stop_loop(); });
        core = io_core.get();
        core->start();
    }
    thread.io().run(loop, [this] { core->on_wake(); });
    const std::lock_guard lock(core_lock);
    core = nullptr;
    io_core.reset();
}

// Shared loop, on its thread: the core joins the running loop; every wake-up
// of the loop looks at this publisher's outbox, starting with what was
// published before start(). When the core has stopped it leaves in a task of
// its own (not inside the core's own callback).
void Publisher::Impl::open_on_shared_loop() {
    sdk::SharedLoop& shared = *thread.shared();
    running =
        make_core(shared.loop(), [this] { thread.io().post([this] { close_on_shared_loop(); }); });
    core = running.get();
    shared.publishers().fetch_add(1, std::memory_order_relaxed);
    shared.add_wake_handler(this, [this] { core->on_wake(); });
    core->start();
    core->on_wake();
}

void Publisher::Impl::close_on_shared_loop() {
    sdk::SharedLoop& shared = *thread.shared();
    shared.remove_wake_handler(this);
    core = nullptr;
    running.reset();
    shared.publishers().fetch_sub(1, std::memory_order_relaxed);
    thread.closed();
}

Publisher::Publisher(PublisherOptions options, PublisherHandler& handler)
    : impl_(std::make_unique<Impl>(std::move(options), handler)) {}

Publisher::~Publisher() {
    try {
        stop();
    } catch (const std::exception& e) {
        impl_->thread.destroyed_badly(e.what());
        impl_->log->error("publisher destroyed badly: {}", e.what());
    }
}

void Publisher::start() {
    Impl* impl = impl_.get();
    impl->thread.start([impl] { impl->open_on_shared_loop(); }, [impl] { impl->run_io_thread(); });
}

void Publisher::stop() {
    Impl* impl = impl_.get();
    const auto stop_core = [impl] {
        if (impl->core) impl->core->stop(kStopDrainMs);
    };
    impl->thread.stop(stop_core, stop_core);
}

void Publisher::add_service(const std::string& name, ServiceMode mode) {
    if (name.empty()) throw std::invalid_argument("empty service name");
    sdk::require_name_fits(name, proto::kMaxServiceNameBytes, "service name");
    require_utf8(name, "service name '" + name + "'");
    {
        std::lock_guard lock(impl_->mutex);
        const auto [it, inserted] = impl_->services.emplace(name, mode);
        if (!inserted && it->second != mode) {
            throw std::invalid_argument("service " + name + " was already added with another mode");
        }
        if (!inserted) return;
    }
    sdk::OutboxRecord record;
    record.kind = sdk::OutboxRecord::Kind::kAnnounce;
    record.mode = mode;
    impl_->push(record, {}, name, {}, false);
}

PublishedItem Publisher::add_item(const std::string& service, const std::string& item) {
    if (item.empty()) throw std::invalid_argument("empty item name");
    sdk::require_name_fits(item, proto::kMaxItemNameBytes, "item name");
    require_utf8(item, "item name");
    {
        std::lock_guard lock(impl_->mutex);
        if (!impl_->services.count(service)) {
            throw std::invalid_argument("service " + service +
                                        " was not added (add_service first)");
        }
    }
    bool created = false;
    const PublishedItem handle = impl_->handle_for(service, item, created);
    sdk::OutboxRecord record;
    record.kind = sdk::OutboxRecord::Kind::kAddItem;
    record.item = handle.id;
    impl_->push(record, {}, service, item, false);
    return handle;
}

bool Publisher::refresh(PublishedItem item, const FieldList& fields, const ItemState& state) {
    return impl_->publish(sdk::OutboxRecord::Kind::kRefresh, item, state, fields.values(), 0);
}

bool Publisher::update(PublishedItem item, const FieldList& fields, uint64_t publish_time_ns) {
    const uint64_t stamp = publish_time_ns == kStampNow ? realtime_now_ns() : publish_time_ns;
    return impl_->publish(sdk::OutboxRecord::Kind::kUpdate, item, {}, fields.values(), stamp);
}

bool Publisher::trade(PublishedItem item, const FieldList& fields, uint64_t publish_time_ns) {
    const uint64_t stamp = publish_time_ns == kStampNow ? realtime_now_ns() : publish_time_ns;
    return impl_->publish(sdk::OutboxRecord::Kind::kUpdate, item, {}, fields.values(), stamp, true);
}

bool Publisher::refresh_book(PublishedItem item, Domain domain, const FieldList& summary,
                             const BookChanges& entries, const ItemState& state) {
    const bool by_price = domain == Domain::kMarketByPrice;
    if (domain == Domain::kMarketPrice ||
        (by_price ? !entries.keys_by_price() : !entries.keys_by_name())) {
        throw std::invalid_argument("refresh_book: " + std::string(domain_name(domain)) +
                                    " takes " + (by_price ? "price" : "name") +
                                    " keys; nothing was published");
    }
    return impl_->publish(sdk::OutboxRecord::Kind::kRefresh, item, state, summary.values(), 0,
                          false, &entries, domain);
}

bool Publisher::update_book(PublishedItem item, const FieldList& summary,
                            const BookChanges& changes, uint64_t publish_time_ns) {
    const uint64_t stamp = publish_time_ns == kStampNow ? realtime_now_ns() : publish_time_ns;
    return impl_->publish(sdk::OutboxRecord::Kind::kUpdate, item, {}, summary.values(), stamp, true,
                          changes.empty() ? nullptr : &changes);
}

bool Publisher::status(PublishedItem item, const ItemState& state) {
    return impl_->publish(sdk::OutboxRecord::Kind::kStatus, item, state, {}, 0);
}

bool Publisher::flush(std::chrono::milliseconds timeout) {
    if (impl_->thread.io().on_io_thread()) {
        throw std::logic_error("flush() called from a publisher callback would wait forever");
    }
    const uint64_t token = impl_->flush_token.fetch_add(1, std::memory_order_acq_rel) + 1;
    sdk::OutboxRecord record;
    record.kind = sdk::OutboxRecord::Kind::kFlush;
    record.item = token;
    impl_->push(record, {}, {}, {}, false, false);  // never corked: the caller waits for it
    std::unique_lock lock(impl_->flush_mutex);
    return impl_->flush_acked_cv.wait_for(lock, timeout,
                                          [&] { return impl_->flush_acked >= token; });
}

PublisherStats Publisher::stats() const {
    const auto& c = impl_->counters;
    auto get = [](const std::atomic<uint64_t>& v) { return v.load(std::memory_order_relaxed); };
    PublisherStats s;
    s.refreshes_sent = get(c.refreshes_sent);
    s.updates_sent = get(c.updates_sent);
    s.statuses_sent = get(c.statuses_sent);
    s.updates_held = get(c.updates_held);
    s.updates_dropped = get(c.updates_dropped);
    s.outbox_full = get(c.outbox_full);
    s.item_requests = get(c.item_requests);
    s.item_closes = get(c.item_closes);
    s.rejections = get(c.rejections);
    s.connections = get(c.connections);
    s.connection_losses = get(c.connection_losses);
    s.caller_writes = get(c.caller_writes);
    s.posts_received = get(c.posts_received);
    s.posts_accepted = get(c.posts_accepted);
    s.links_dropped = get(c.links_dropped);
    s.frames_refused = get(c.frames_refused);
    s.images_dropped = get(c.images_dropped);
    return s;
}

}  // namespace mdcast
