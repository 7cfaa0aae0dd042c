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

constexpr size_t kRegisterBatch = 1000;
// An ItemRegister entry's bytes besides its name: tags, lengths, the ref.
constexpr size_t kRegisterEntryBytes = 24;
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

template <class Message>
bool PublisherCore::parse(const proto::Frame& frame, Message& message) {
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
template <class Message>
bool PublisherCore::send(proto::FrameType type, const Message& message) {
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

// ---- publishing ----------------------------------------------------------------------------

bool PublisherCore::sendable(const Item& item) const {
    return session_up_ && item.service->id != 0 && item.item_id != 0 &&
           (item.service->mode == ServiceMode::kBroadcast || item.requested);
}

void PublisherCore::publish_refresh(Item& item, std::span<const proto::FieldEntry> fields,
                                    const ItemState& state, uint8_t domain,
                                    std::span<const uint8_t> map) {
    item.image.clear();
    item.image.apply(fields);
    if (domain != 0) {  // a book: its entries kept as they will be sent again after a reconnect
        auto book = std::make_unique<proto::BookImage>(static_cast<wire::Domain>(domain));
        std::string why;
        if (book->apply(map, proto::kMaxMapEntries, why) == proto::BookImage::Result::kMalformed)
            log_->warn("book refresh of {}: {}", item.name, why);
        item.image.set_book(std::move(book));
    }
    item.state = state;
    item.has_refresh = state.stream == StreamState::kOpen;
    item.close_owed = false;
    if (sendable(item)) send_refresh(item);
}

void PublisherCore::send_refresh(Item& item) {
    wire::Refresh refresh;
    refresh.set_item_id(item.item_id);
    refresh.set_item_seq(item.seq);
    refresh.set_clear_cache(true);
    refresh.set_solicited(item.service->mode == ServiceMode::kInteractive);
    detail::to_wire_status(item.state, *refresh.mutable_status());
    item.image.to_field_list(*refresh.mutable_fields());
    proto::book_into_refresh(item.image, refresh);
    const size_t bytes = refresh.ByteSizeLong();
    if (bytes > frame_limit_) {
        return drop_oversize(item, frame_over_limit(item.image.book() ? "book image" : "image",
                                                    bytes, frame_limit_));
    }
    if (!send(FrameType::kRefresh, refresh)) return drop_link();
    note_sent(item, bytes);
    counters_.refreshes_sent.fetch_add(1, std::memory_order_relaxed);
}

// The hot path: the update was encoded on the publishing thread; here it is
// merged into the image and framed with the item's id and sequence into the
// batch that flush_updates() writes.
void PublisherCore::publish_update(Item& item, std::span<const proto::FieldEntry> fields,
                                   std::span<const uint8_t> rest, bool book) {
    if (!item.has_refresh || (book && !item.image.book())) {
        counters_.updates_dropped.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    if (!item.pending.empty() || (!sendable(item) && !item.ever_registered &&
                                  item.service->mode == ServiceMode::kBroadcast)) {
        return hold_until_registered(item, rest);
    }
    if (!book) {
        item.image.apply(fields);
    } else if (!proto::decode_update(rest, update_) || !apply_to_image(item, update_)) {
        return;
    }
    ++item.seq;
    if (!sendable(item)) {
        counters_.updates_held.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    send_update(item, rest, book);
}

// An update (a book's actions too) merged into the item's image; false, counted
// dropped, when its map does not fit the item (keys of the wrong kind).
bool PublisherCore::apply_to_image(Item& item, const proto::UpdateView& update) {
    std::string why;
    if (proto::apply_update(item.image, update, proto::kMaxMapEntries, why) !=
        proto::BookOutcome::kMalformed) {
        return true;
    }
    counters_.updates_dropped.fetch_add(1, std::memory_order_relaxed);
    log_->warn("book update of {} dropped: {}", item.name, why);
    return false;
}

void PublisherCore::send_update(Item& item, std::span<const uint8_t> rest, bool book) {
    const size_t bytes = update_body_bound(rest.size());
    if (bytes > frame_limit_) [[unlikely]] {
        return drop_oversize(
            item, frame_over_limit(book ? "book update" : "update", bytes, frame_limit_));
    }
    note_sent(item, bytes);
    proto::append_update_frame(out_, item.item_id, item.seq, rest, book ? proto::kFrameFlagMap : 0);
    ++unflushed_updates_;
}

// THE ORDERING RULE (docs/sdk.md): a broadcast item's updates published before
// its first registration are kept in order and sent after its refresh, each
// with its own sequence number, not merged into the image. Kept as Update
// bodies without item id and sequence (proto3 leaves zero fields out), which
// send_pending() completes; over max_queued_bytes they are merged after all.
void PublisherCore::hold_until_registered(Item& item, std::span<const uint8_t> rest) {
    pending_bytes_ += rest.size();
    item.pending.emplace_back(reinterpret_cast<const char*>(rest.data()), rest.size());
    if (pending_bytes_ > options_.max_queued_bytes) fold_pending(item);
}

// The item's held updates merged into its image after all (bounded memory).
void PublisherCore::fold_pending(Item& item) {
    for (const std::string& body : item.pending) {
        pending_bytes_ -= body.size();
        if (!proto::decode_update(
                std::span(reinterpret_cast<const uint8_t*>(body.data()), body.size()), update_)) {
            continue;
        }
        if (!apply_to_image(item, update_)) continue;
        ++item.seq;
        counters_.updates_held.fetch_add(1, std::memory_order_relaxed);
    }
    item.pending.clear();
}

// After the refresh: the held updates, in order, with the item's id and the
// sequence numbers that follow the refresh's.
void PublisherCore::send_pending(Item& item) {
    std::vector<std::string> pending;
    pending.swap(item.pending);
    for (const std::string& body : pending) pending_bytes_ -= body.size();
    for (const std::string& body : pending) {
        const auto bytes = std::span(reinterpret_cast<const uint8_t*>(body.data()), body.size());
        if (!proto::decode_update(bytes, update_) || !apply_to_image(item, update_)) continue;
        ++item.seq;
        send_update(item, bytes, !update_.map_bytes.empty());
        if (!item.has_refresh) return;  // dropped for its size (the rest with it)
    }
}

// ---- flush ---------------------------------------------------------------------------------

void PublisherCore::want_flush(uint64_t token) {
    flush_wanted_ = std::max(flush_wanted_, token);
    send_flush_if_due();
}

// A Flush goes out once everything before it is on the connection: no
// announcement or registration is still unanswered (their answers send refreshes
// and held updates). Disconnected, it waits for the next connection.
void PublisherCore::send_flush_if_due() {
    if (!session_up_ || answers_outstanding_ > 0 || flush_wanted_ <= flush_sent_) return;
    wire::Flush flush;
    flush.set_token(flush_wanted_);
    if (send(FrameType::kFlush, flush)) flush_sent_ = flush_wanted_;
}

void PublisherCore::on_flush_ack(const proto::Frame& frame) {
    wire::FlushAck ack;
    if (!parse(frame, ack)) return;
    if (flushed_) flushed_(ack.token());
}

void PublisherCore::publish_status(Item& item, const ItemState& state) {
    item.state = state;
    const bool to_send = sendable(item);
    if (state.stream == StreamState::kClosed) {
        item.has_refresh = false;
        item.image.clear();
    }
    if (!to_send) return;
    wire::ItemStatus status;
    status.set_item_id(item.item_id);
    detail::to_wire_status(state, *status.mutable_status());
    if (send(FrameType::kItemStatus, status)) {
        counters_.statuses_sent.fetch_add(1, std::memory_order_relaxed);
    }
}

// ---- the distributor's side ----------------------------------------------------------------

void PublisherCore::announce(const Service& service) {
    wire::ServiceAnnounce announce;
    announce.set_name(service.name);
    announce.set_mode(service.mode == ServiceMode::kInteractive ? wire::SERVICE_INTERACTIVE
                                                                : wire::SERVICE_BROADCAST);
    announce.set_takeover_token(service.takeover_token.empty() ? options_.takeover_secret
                                                               : service.takeover_token);
    announce.set_takes_posts(true);  // every post is answered (PublisherHandler::on_post)
    announce.set_standby_rank(options_.standby_rank);
    if (send(FrameType::kServiceAnnounce, announce)) ++answers_outstanding_;
}

// In requests of at most kRegisterBatch names and half the distributor's
// frame limit: 1,000 names of 100 bytes would pass a limit of 64 KiB, and the
// connection would be closed for them after every reconnect.
void PublisherCore::register_items(Service& service) {
    wire::ItemRegister request;
    request.set_service_id(service.id);
    size_t bytes = 0;
    for (const Item* item : service.to_register) {
        const size_t entry_bytes = item->name.size() + kRegisterEntryBytes;
        const auto names = static_cast<size_t>(request.items_size());
        if (names == kRegisterBatch || (names > 0 && bytes + entry_bytes > frame_limit_ / 2)) {
            if (send(FrameType::kItemRegister, request)) ++answers_outstanding_;
            request.clear_items();
            bytes = 0;
        }
        auto* entry = request.add_items();
        entry->set_ref(item->handle.id);
        entry->set_name(item->name);
        bytes += entry_bytes;
    }
    if (request.items_size() > 0 && send(FrameType::kItemRegister, request)) ++answers_outstanding_;
    service.to_register.clear();
}

void PublisherCore::on_session_frame(const proto::Frame& frame) {
    handle_link_frame(frame);
    flush_updates();  // held updates an ItemRegistered released
}

void PublisherCore::handle_link_frame(const proto::Frame& frame) {
    switch (frame.type) {
        case FrameType::kServiceAnnounceResponse:
            return on_announce_response(frame);
        case FrameType::kItemRegistered:
            return on_items_registered(frame);
        case FrameType::kImageRequest:
            return on_item_request(frame);
        case FrameType::kUnsubscribe:
            return on_item_close(frame);
        case FrameType::kItemStatus:
            return on_rejection(frame);
        case FrameType::kFlushAck:
            return on_flush_ack(frame);
        case FrameType::kPost:
            return on_post(frame);
        default:
            return;
    }
}

void PublisherCore::on_announce_response(const proto::Frame& frame) {
    wire::ServiceAnnounceResponse response;
    if (!parse(frame, response)) return;
    if (answers_outstanding_ > 0) --answers_outstanding_;
    const auto found = services_.find(response.name());
    if (found == services_.end()) return;
    Service& service = *found->second;
    const bool accepted = response.service_id() != 0;
    if (accepted) {
        service.id = response.service_id();
        service.takeover_token = response.takeover_token();
        by_service_id_[service.id] = &service;
        if (service.mode == ServiceMode::kBroadcast) {
            service.to_register = service.items;
            register_items(service);
        }
    } else {
        log_->warn("service {} refused by {}: {}", service.name, failover_.peer().to_string(),
                   response.status().text());
    }
    guarded(*log_, "on_service",
            [&] { handler_.on_service(service.name, accepted, response.status().text()); });
    send_flush_if_due();
}

void PublisherCore::on_items_registered(const proto::Frame& frame) {
    wire::ItemRegistered response;
    if (!parse(frame, response)) return;
    if (answers_outstanding_ > 0) --answers_outstanding_;
    const ItemState refused = detail::to_item_state(response.status());
    for (const auto& entry : response.items()) {
        Item* const found = item_at(entry.ref());
        if (!found) continue;
        Item& item = *found;
        if (entry.item_id() == 0) {
            counters_.rejections.fetch_add(1, std::memory_order_relaxed);
            guarded(*log_, "on_item_rejected",
                    [&] { handler_.on_item_rejected(item.handle, refused); });
            continue;
        }
        bind(item, entry.item_id());
        item.ever_registered = true;
        item.seq = std::max(item.seq, entry.last_item_seq());  // continue after a reconnect
        if (item.has_refresh && sendable(item)) {
            send_refresh(item);
            send_pending(item);
        } else {
            fold_pending(item);
            if (item.close_owed) publish_status(item, item.state);
        }
    }
    send_flush_if_due();
}

void PublisherCore::bind(Item& item, uint64_t item_id) {
    if (item.item_id != 0) by_item_id_.erase(item.item_id);
    item.item_id = item_id;
    by_item_id_[item_id] = &item;
}

void PublisherCore::on_item_request(const proto::Frame& frame) {
    wire::ImageRequest request;
    if (!parse(frame, request)) return;
    Service* service = nullptr;
    if (const auto by_id = by_service_id_.find(request.service_id());
        by_id != by_service_id_.end()) {
        service = by_id->second;
    } else if (const auto by_name = services_.find(request.service_name());
               by_name != services_.end()) {
        service = by_name->second.get();
    }
    if (!service || service->mode != ServiceMode::kInteractive || request.item_id() == 0 ||
        request.item_name().empty()) {
        log_->warn("ignoring a request for {}/{}: not an interactive service of this publisher",
                   request.service_name(), request.item_name());
        return;
    }
    const PublishedItem handle = handle_for_(service->name, request.item_name());
    Item& item = item_for(handle, *service, request.item_name());
    bind(item, request.item_id());
    item.requested = true;
    counters_.item_requests.fetch_add(1, std::memory_order_relaxed);
    guarded(*log_, "on_item_request",
            [&] { handler_.on_item_request(handle, service->name, item.name); });
}

void PublisherCore::on_item_close(const proto::Frame& frame) {
    wire::Unsubscribe request;
    if (!parse(frame, request)) return;
    for (uint64_t id : request.item_ids()) {
        const auto found = by_item_id_.find(id);
        if (found == by_item_id_.end()) continue;
        Item& item = *found->second;
        item.requested = false;
        counters_.item_closes.fetch_add(1, std::memory_order_relaxed);
        guarded(*log_, "on_item_closed",
                [&] { handler_.on_item_closed(item.handle, item.service->name, item.name); });
    }
}

void PublisherCore::on_rejection(const proto::Frame& frame) {
    wire::ItemStatus status;
    if (!parse(frame, status)) return;
    counters_.rejections.fetch_add(1, std::memory_order_relaxed);
    const auto found = by_item_id_.find(status.item_id());
    const ItemState state = detail::to_item_state(status.status());
    log_->warn("distributor refused a message for item {}: {}", status.item_id(), state.text);
    if (found == by_item_id_.end()) return;
    guarded(*log_, "on_item_rejected",
            [&] { handler_.on_item_rejected(found->second->handle, state); });
}

}  // namespace mdcast::sdk
