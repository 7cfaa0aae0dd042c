#include "publisher_core.h"

#include <algorithm>
#include <random>

#include "common/clock.h"
#include "event_writer.h"
#include "guarded_call.h"
#include "proto/book_image.h"
#include "proto/limits.h"
#include "sdk_options.h"

namespace mdcast::sdk {

using proto::FrameType;
namespace wire = mdcast::wire::v1;

namespace {

// How often work_from_caller() takes from the outbox before leaving the rest
// (other threads' records) to the I/O thread.
constexpr int kCallerRounds = 4;
// Distributors send small frames (answers, requests); a larger one is an error.
constexpr uint32_t kMaxFrameBytes = proto::kDefaultFrameBodyBytes;

// What the publisher accepts from a distributor: the session, the answers to
// its requests, rejections (ItemStatus), and the interactive conversation:
// ImageRequest = "a subscriber wants this item", Unsubscribe = "nobody does";
// and posts (Post), answered by PublisherHandler::on_post (publisher_posts.cpp).
const proto::FrameTypeSet kAccepted{FrameType::kLoginResponse,
                                    FrameType::kPing,
                                    FrameType::kPong,
                                    FrameType::kClose,
                                    FrameType::kServiceAnnounceResponse,
                                    FrameType::kItemRegistered,
                                    FrameType::kItemStatus,
                                    FrameType::kImageRequest,
                                    FrameType::kUnsubscribe,
                                    FrameType::kFlushAck,
                                    FrameType::kPost};

}  // namespace

PublisherCore::PublisherCore(
    EventLoop& loop, const PublisherOptions& options, PublisherHandler& handler,
    PublisherCounters& counters, PublisherOutbox* outbox,
    std::function<PublishedItem(const std::string&, const std::string&)> handle_for,
    std::function<void()> stop_loop, std::shared_ptr<const TlsContext> tls,
    std::function<void(uint64_t)> flushed)
    : options_(options),
      handler_(handler),
      counters_(counters),
      outbox_(outbox),
      handle_for_(std::move(handle_for)),
      stop_loop_(std::move(stop_loop)),
      tls_(std::move(tls)),
      log_(log::get("sdk.publisher")),
      flusher_(loop, std::chrono::microseconds(0)),
      failover_(
          loop, flusher_, kAccepted, options.distributors,
          reconnect_settings(options, options.distributors.size()),
          [this](const ServerAddress& distributor) {
              return link_settings(options_, distributor, kMaxFrameBytes, options_.max_output_bytes,
                                   tls_);
          },
          *this, counters, log_),
      link_(failover_.link()),
      retry_timer_(loop,
                   [this] {
                       output_full_ = false;
                       work();
                   }),
      drain_timer_(loop, [this] { check_drained(); }),
      flushed_(std::move(flushed)) {}

PublisherCore::~PublisherCore() = default;

bool PublisherCore::parse(const proto::Frame& frame, google::protobuf::MessageLite& message) {
    if (message.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) return true;
    link_.abort("malformed " + std::string(proto::frame_type_name(frame.type)) + " body");
    return false;
}

// ---- connection ----------------------------------------------------------------------------

void PublisherCore::start() {
    failover_.start();
}

void PublisherCore::on_connection_event(const ConnectionEvent& event) {
    guarded(*log_, "on_connection", [&] { handler_.on_connection(event); });
}

void PublisherCore::on_session_up(const wire::LoginResponse&) {
    session_up_ = true;
    frame_limit_ = announced_frame_limit();
    largest_sent_ = {};
    if (!fanned()) outbox_->set_max_frame_bytes(frame_limit_);  // the fan sets the links' least
    for (auto& [name, service] : services_) announce(*service);
    work();
}

bool PublisherCore::on_session_down(bool, LinkDown) {
    session_up_ = false;
    if (link_.peer_close().reason == close_reason_name(CloseReason::kFrameTooLarge)) {
        drop_refused_frame();
    }
    flush_owed_ = false;
    out_.clear();  // framed for the lost connection; the next one starts from the image
    unflushed_updates_ = 0;
    by_service_id_.clear();
    by_item_id_.clear();
    answers_outstanding_ = 0;
    flush_sent_ = 0;  // asked again on the next connection, after its registrations
    for (auto& [name, service] : services_) {
        service->id = 0;
        service->to_register.clear();
    }
    for (auto& item : items_) {
        if (!item) continue;
        item->item_id = 0;
        item->requested = false;  // the distributor asks again for what is still wanted
    }
    if (stopping_) {
        check_drained();
        return false;
    }
    return true;
}

void PublisherCore::stop(uint32_t drain_ms) {
    if (stopping_) return;
    stopping_ = true;
    failover_.stop();
    drain_deadline_ns_ = monotonic_ns() + int64_t{drain_ms} * 1'000'000;
    check_drained();
}

// Stopping: keeps sending until the outbox and the socket's queue are empty or
// the deadline passes, then says goodbye.
void PublisherCore::check_drained() {
    const bool pending =
        next_ < batch_.records.size() || (outbox_ && !outbox_->empty()) || link_.queued_bytes() > 0;
    if (session_up_ && pending && monotonic_ns() < drain_deadline_ns_) {
        work();
        return drain_timer_.start_once(std::chrono::milliseconds(1));
    }
    if (pending && session_up_) log_->warn("stopping with output not yet sent to the distributor");
    link_.close(CloseReason::kShutdown, "publisher stopping");
    session_up_ = false;
    on_connection_event(failover_.event(ConnectionState::kStopped, "stop() called"));
    stop_loop_();
}

// ---- the outbox ----------------------------------------------------------------------------

void PublisherCore::on_wake() {
    if (flush_owed_) {
        flush_owed_ = false;
        link_.flush();  // the rest of the publishing thread's write, before anything new
    }
    if (output_full_) return;
    // The round's write is made here, not at the loop's end, so that the gate
    // sees how long the round took.
    const int64_t start = monotonic_ns();
    work();
    link_.flush();
    caller_gate_.wrote(start, monotonic_ns());
}

bool PublisherCore::work_from_caller(bool coalesce) {
    if (!session_up_ || stopping_ || output_full_ || next_ < batch_.records.size() ||
        link_.queued_bytes() > 0) {
        return false;
    }
    const int64_t start = monotonic_ns();
    if (coalesce && caller_gate_.coalescing(start)) return false;
    const bool done = caller_round();
    caller_gate_.wrote(start, monotonic_ns());
    return done;
}

// Takes, applies and writes what the outbox holds (work_from_caller's round).
bool PublisherCore::caller_round() {
    bool drained = false;  // a take() found nothing: the next push() wakes again
    for (int round = 0; round < kCallerRounds; ++round) {
        outbox_->take(batch_);
        next_ = 0;
        drained = batch_.records.empty();
        if (drained || !apply_caller_updates()) break;
    }
    return write_caller_updates() && drained;
}

// The batch's updates, up to the first record that is not one (or until
// out_ holds half of max_output_bytes). True when it applied them all. An
// update over this connection's frame limit (taken under an earlier one) is
// left to the I/O thread too: dropping its item sends a status and calls the
// handler, both the loop's to do.
bool PublisherCore::apply_caller_updates() {
    while (next_ < batch_.records.size()) {
        const OutboxRecord& record = batch_.records[next_];
        if (record.kind != OutboxRecord::Kind::kUpdate ||
            out_.size() > options_.max_output_bytes / 2 ||
            update_body_bound(record.wire_size) > frame_limit_) {
            return false;
        }
        ++next_;
        apply(batch_, record);
    }
    return true;
}

// out_ to the socket from the publishing thread. True when the kernel took it
// all (or there was nothing); otherwise the I/O thread finishes: the rest is
// queued on the connection (flush_owed_), or, refused, still in out_.
bool PublisherCore::write_caller_updates() {
    if (out_.empty()) return true;
    const auto written =
        link_.write_now(std::span(reinterpret_cast<const uint8_t*>(out_.data()), out_.size()));
    if (written == TcpConnection::DirectWrite::kRefused) return false;
    counters_.caller_writes.fetch_add(1, std::memory_order_relaxed);
    out_.clear();
    counters_.updates_sent.fetch_add(unflushed_updates_, std::memory_order_relaxed);
    unflushed_updates_ = 0;
    if (written == TcpConnection::DirectWrite::kWritten) return true;
    flush_owed_ = true;
    return false;
}

// Works through what the application published, in order. While the socket's
// queue is over half of max_output_bytes it waits (millisecond steps) so TCP
// back-pressure reaches the outbox and, once that is full, the application.
// Fanned, there is no outbox to take: what a new session needs is sent.
void PublisherCore::work() {
    for (;;) {
        if (next_ >= batch_.records.size()) {
            if (fanned()) break;
            outbox_->take(batch_);
            next_ = 0;
            if (batch_.records.empty()) break;
        }
        // The socket's queue changes only when this thread sends (updates go
        // to out_ first), so it is read again only after a record that sent.
        size_t queued = link_.queued_bytes();
        while (next_ < batch_.records.size()) {
            if (session_up_ && queued + out_.size() > options_.max_output_bytes / 2) {
                flush_updates();
                output_full_ = true;
                retry_timer_.start_once(std::chrono::milliseconds(1));
                return;
            }
            const OutboxRecord& record = batch_.records[next_++];
            apply(batch_, record);
            if (record.kind != OutboxRecord::Kind::kUpdate) queued = link_.queued_bytes();
        }
        register_new_items();
        flush_updates();
    }
    register_new_items();
    flush_updates();  // what the publishing thread framed and could not write
}

// Fanned: never waits for this distributor, so a slow or dead one holds back
// neither the others nor the application. The link's queue is bounded by
// max_output_bytes: past it the connection refuses the write and the link is
// dropped (flush_updates), to be re-imaged on the next connection.
void PublisherCore::apply_record(const OutboxBatch& batch, const OutboxRecord& record) {
    apply(batch, record);
    if (out_.size() > options_.max_output_bytes / 2) flush_updates();
}

void PublisherCore::end_batch() {
    register_new_items();
    flush_updates();
}

bool PublisherCore::congested() const {
    return session_up_ && link_.queued_bytes() + out_.size() > options_.max_output_bytes / 2;
}

void PublisherCore::register_new_items() {
    for (auto& [name, service] : services_) {
        if (!service->to_register.empty()) register_items(*service);
    }
}

// Every other message goes out after the updates framed before it.
bool PublisherCore::send(proto::FrameType type, const google::protobuf::MessageLite& message) {
    flush_updates();
    return link_.send(type, message);
}

// The updates framed since the last flush, handed to the connection as one
// write (natural batching: the connection writes at the end of the loop pass).
void PublisherCore::flush_updates() {
    if (out_.empty()) return;
    const bool sent =
        link_.send_frame(std::span(reinterpret_cast<const uint8_t*>(out_.data()), out_.size()));
    out_.clear();
    if (!sent) {
        // The distributor would see a gap: start again from the image.
        unflushed_updates_ = 0;
        return drop_link();
    }
    counters_.updates_sent.fetch_add(unflushed_updates_, std::memory_order_relaxed);
    unflushed_updates_ = 0;
}

// Loudly: the distributor this link feeds misses updates until the next
// connection re-publishes every image.
void PublisherCore::drop_link() {
    if (!link_.up()) return;
    counters_.links_dropped.fetch_add(1, std::memory_order_relaxed);
    log_->error(
        "dropping the link to {}: {} bytes not yet taken passed max_output_bytes ({}); "
        "its items are re-published from their images on the next connection",
        failover_.peer().to_string(), link_.queued_bytes(), options_.max_output_bytes);
    link_.abort("output to the distributor passed max_output_bytes");
}

bool PublisherCore::apply(const OutboxBatch& batch, const OutboxRecord& r) {
    using Kind = OutboxRecord::Kind;
    if (r.kind == Kind::kAnnounce) {
        auto& service = services_[std::string(batch.text1(r))];
        if (!service) {
            service = std::make_unique<Service>();
            service->name = batch.text1(r);
            service->mode = r.mode;
            if (session_up_) announce(*service);
        }
        return true;
    }
    if (r.kind == Kind::kFlush) {
        want_flush(r.item);
        return true;
    }
    if (r.kind == Kind::kAddItem) {
        const auto service = services_.find(std::string(batch.text1(r)));
        if (service == services_.end()) return false;
        Item& item = item_for(PublishedItem{r.item}, *service->second, std::string(batch.text2(r)));
        if (item.service->mode == ServiceMode::kBroadcast && item.service->id != 0 &&
            item.item_id == 0) {
            item.service->to_register.push_back(&item);
        }
        return true;
    }
    Item* const found = item_at(r.item);
    if (!found) return false;
    Item& item = *found;
    switch (r.kind) {
        case Kind::kRefresh:
            publish_refresh(item, batch.fields_of(r), record_state(batch, r), r.domain,
                            r.book ? batch.wire_of(r) : std::span<const uint8_t>{});
            break;
        case Kind::kUpdate:
            publish_update(item, batch.fields_of(r), batch.wire_of(r), r.book);
            break;
        case Kind::kStatus:
            publish_status(item, record_state(batch, r));
            break;
        default:
            break;
    }
    return true;
}

ItemState PublisherCore::record_state(const OutboxBatch& batch, const OutboxRecord& r) {
    return ItemState{r.stream, r.data, r.code, std::string(batch.text1(r))};
}

PublisherCore::Item& PublisherCore::item_for(PublishedItem handle, Service& service,
                                             const std::string& name) {
    if (handle.id >= items_.size()) items_.resize(handle.id + 1);
    auto& slot = items_[handle.id];
    if (!slot) {
        slot = std::make_unique<Item>();
        slot->handle = handle;
        slot->service = &service;
        slot->name = name;
        service.items.push_back(slot.get());
    }
    return *slot;
}

}  // namespace mdcast::sdk
