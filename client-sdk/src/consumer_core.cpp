#include "consumer_core.h"

#include <event2/event.h>

#include <algorithm>
#include <random>

#include "common/clock.h"
#include "proto/book_image.h"
#include "proto/limits.h"
#include "proto/source_ids.h"
#include "sdk_options.h"

namespace mdcast::sdk {

using detail::EventWriter;
using proto::FrameType;
namespace wire = mdcast::wire::v1;

namespace {

// What the consumer accepts from a server.
const proto::FrameTypeSet kAccepted{
    FrameType::kLoginResponse, FrameType::kPing,   FrameType::kPong,       FrameType::kClose,
    FrameType::kRefresh,       FrameType::kUpdate, FrameType::kItemStatus, FrameType::kDirectory,
    FrameType::kGroupStatus,   FrameType::kPostAck};

}  // namespace

std::string ConsumerCore::item_key(const std::string& service, const std::string& name) {
    std::string key;
    key.reserve(service.size() + 1 + name.size());
    key.append(service).push_back('\0');
    key.append(name);
    return key;
}

// The wall-clock time the connection read the message being handled: its
// read time on CLOCK_MONOTONIC (taken once per read) moved to CLOCK_REALTIME
// by an offset sampled every housekeeping tick, so there is no clock call per
// message and the loop's coarse timer clock (EventLoop::Timers::kCoarse) is
// not used. For events made from a frame.
uint64_t ConsumerCore::read_time_ns() const {
    return static_cast<uint64_t>(link_.last_input_ns() + realtime_minus_monotonic_ns_);
}

// For events the consumer makes itself (connection lost, catch-up timed out).
uint64_t ConsumerCore::now_ns() const {
    return static_cast<uint64_t>(realtime_ns());
}

void ConsumerCore::sample_clock_offset() {
    realtime_minus_monotonic_ns_ = realtime_ns() - monotonic_ns();
}

ConsumerCore::ConsumerCore(EventLoop& loop, const ConsumerOptions& options, EventSink& sink,
                           ConsumerCounters& counters, std::function<void(ItemHandle)> finished,
                           std::function<void()> stop_loop, std::shared_ptr<const TlsContext> tls)
    : loop_(loop),
      options_(options),
      sink_(sink),
      borrow_(sink.delivers_at_once()),
      counters_(counters),
      finished_(std::move(finished)),
      stop_loop_(std::move(stop_loop)),
      tls_(std::move(tls)),
      log_(log::get("sdk.consumer")),
      flusher_(loop, std::chrono::microseconds(0)),
      failover_(
          loop, flusher_, kAccepted, options.servers,
          reconnect_settings(options, options.servers.size()),
          [this](const ServerAddress& server) {
              LinkSettings settings = link_settings(options_, server, options_.max_frame_bytes,
                                                    options_.max_output_bytes, tls_);
              settings.group_status = true;  // on_group_status expands them
              return settings;
          },
          *this, counters, log_),
      link_(failover_.link()),
      housekeeping_(loop, [this] { on_housekeeping(); }),
      spinner_(loop, std::chrono::microseconds(options.busy_poll_us)),
      posts_(counters.posts_accepted) {}

ConsumerCore::~ConsumerCore() = default;

template <class Fill>
void ConsumerCore::emit(ItemHandle handle, Fill&& fill) {
    Event* event = sink_.acquire(handle);
    if (!event) return;
    fill(*event);
    sink_.commit();
}

EventWriter::ItemRef ConsumerCore::ref(const Item& item) const {
    return EventWriter::ItemRef{item.handle, item.service, item.name, options_.dictionary.get(),
                                borrow_};
}

// ---- connection ----------------------------------------------------------------------------

void ConsumerCore::start() {
    sample_clock_offset();
    housekeeping_.start_periodic(std::chrono::milliseconds(100));
    failover_.start();
}

void ConsumerCore::stop() {
    if (stopped_) return;
    stopped_ = true;
    failover_.stop();
    housekeeping_.stop();
    link_.close(CloseReason::kShutdown, "consumer stopping");
    session_up_ = false;
    posts_.fail_all(StatusCode::kCancelled, "the consumer stopped before the answer");
    emit_connection(ConnectionState::kStopped, "stop() called");
    for (auto& [handle, item] : items_) finished_(item->handle);
    items_.clear();
    by_id_.clear();
    by_name_.clear();
    holding_.clear();
    stop_loop_();
}

void ConsumerCore::emit_connection(ConnectionState state, const std::string& text) {
    on_connection_event(failover_.event(state, text));
}

void ConsumerCore::on_connection_event(const ConnectionEvent& connection) {
    emit(ItemHandle{}, [&](Event& event) { EventWriter::connection(event, connection); });
}

void ConsumerCore::on_session_up(const wire::LoginResponse&) {
    session_up_ = true;
    std::vector<Item*> all;
    all.reserve(items_.size());
    for (auto& [handle, item] : items_) all.push_back(item.get());
    // Handles grow with every request: ascending order re-asks in the order asked.
    std::sort(all.begin(), all.end(),
              [](const Item* a, const Item* b) { return a->handle.id < b->handle.id; });
    send_subscribe(all);
    if (directory_wanted_) request_directory();
}

bool ConsumerCore::on_session_down(bool, LinkDown cause) {
    session_up_ = false;
    posts_.fail_all(StatusCode::kConnectionLost, "the connection ended before the answer (" +
                                                     std::string(link_down_name(cause)) +
                                                     "); the post may have been taken");
    by_id_.clear();
    return !stopped_;
}

void ConsumerCore::on_failing_over(bool was_up, LinkDown cause) {
    if (!was_up) return;
    // The server's own reason when it gave one (kicked, slow_consumer, ...): each
    // item then says why it went suspect, not only that the connection went.
    const ServerLink::PeerClose& said = link_.peer_close();
    const std::string why = said.reason.empty()
                                ? std::string(link_down_name(cause))
                                : "closed by the server: " + said.reason +
                                      (said.text.empty() ? std::string() : ": " + said.text);
    mark_all_suspect(cause == LinkDown::kServerShutdown ? StatusCode::kServerShutdown
                                                        : StatusCode::kConnectionLost,
                     "lost " + failover_.peer().to_string() + ": " + why + "; failing over");
}

// Every streaming item is suspect until the next server's fresh image.
void ConsumerCore::mark_all_suspect(StatusCode code, const std::string& text) {
    const ItemState state{StreamState::kOpen, DataState::kSuspect, code, text};
    std::vector<Item*> streaming;
    for (auto& [handle, item] : items_) {
        item->item_id = 0;
        if (item->snapshot) continue;
        item->sequencer.on_connection_lost();
        streaming.push_back(item.get());
    }
    holding_.clear();
    std::sort(streaming.begin(), streaming.end(),
              [](const Item* a, const Item* b) { return a->handle.id < b->handle.id; });
    const uint64_t now = now_ns();
    for (Item* item : streaming) {
        emit(item->handle,
             [&](Event& event) { EventWriter::status(event, ref(*item), state, now); });
    }
}

// ---- frames from the server ----------------------------------------------------------------

void ConsumerCore::on_session_frame(const proto::Frame& frame) {
    spinner_.on_work();
    switch (frame.type) {
        case FrameType::kUpdate:
            return on_update(frame);
        case FrameType::kRefresh:
            return on_refresh(frame);
        case FrameType::kItemStatus:
            return on_item_status(frame);
        case FrameType::kGroupStatus:
            return on_group_status(frame);
        case FrameType::kDirectory:
            return on_directory(frame);
        case FrameType::kPostAck: {
            wire::PostAck ack;
            if (!ack.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size())))
                return link_.abort("malformed PostAck body");
            return posts_.on_ack(ack);
        }
        default:
            return;
    }
}

// The hot path: the update's own fields decoded without allocating (its field
// list only when a failover holds the item, otherwise when the application
// asks), one hash lookup, then the event.
void ConsumerCore::on_update(const proto::Frame& frame) {
    if (!proto::decode_update_header(frame.body, update_) &&
        !proto::decode_update(frame.body, update_)) {
        return link_.abort("malformed Update body");
    }
    Item* const bound = by_id_.find(update_.item_id);
    if (!bound) return;  // unsubscribed a moment ago
    Item& item = *bound;
    switch (item.sequencer.on_update(update_.item_seq)) {
        case ItemSequencer::Verdict::kDeliver:
            return emit(item.handle, [&](Event& event) {
                EventWriter::update(event, ref(item), update_, read_time_ns());
            });
        case ItemSequencer::Verdict::kDrop:
            counters_.duplicates_dropped.fetch_add(1, std::memory_order_relaxed);
            return;
        case ItemSequencer::Verdict::kHold:
            if (!decode_held_fields()) return;
            return hold_update(item);
        case ItemSequencer::Verdict::kRelease:
            if (!decode_held_fields()) return;
            hold_update(item);
            holding_.erase(&item);
            counters_.catch_ups.fetch_add(1, std::memory_order_relaxed);
            return emit(item.handle, [&](Event& event) {
                EventWriter::refresh(event, ref(item), item.held, update_.item_seq, item.held_state,
                                     false, read_time_ns());
            });
    }
}

// A held image needs the update's fields now (false: malformed, link aborted).
bool ConsumerCore::decode_held_fields() {
    if (!update_.fields.empty() || proto::decode_fields(update_)) return true;
    link_.abort("malformed Update field list");
    return false;
}

// An update merged into a held image, a book's actions too (proto/book_image.h).
void ConsumerCore::hold_update(Item& item) {
    std::string why;
    if (proto::apply_update(item.held, update_, proto::kMaxMapEntries, why) ==
        proto::BookOutcome::kMalformed) {
        link_.abort("malformed book in an Update: " + why);
    }
}

// `image` replaced by the refresh's (false: a malformed book, link aborted).
bool ConsumerCore::take_image(proto::FieldImage& image) {
    std::string why;
    if (proto::assign_refresh(image, refresh_, proto::kMaxMapEntries, why) !=
        proto::BookOutcome::kMalformed) {
        return true;
    }
    link_.abort("malformed book in a Refresh: " + why);
    return false;
}

void ConsumerCore::on_refresh(const proto::Frame& frame) {
    refresh_.Clear();
    if (!refresh_.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) {
        return link_.abort("malformed Refresh body");
    }
    key_ = item_key(refresh_.service_name(), refresh_.item_name());
    const auto names = by_name_.find(key_);
    if (names == by_name_.end()) return refuse_orphan(refresh_);
    const bool closed = refresh_.status().stream_state() == wire::STREAM_CLOSED;
    const uint64_t now = read_time_ns();
    const ItemState state = detail::to_item_state(refresh_.status());
    if (closed && !names->second.snapshots.empty()) {
        Item& item = *names->second.snapshots.front();
        if (!take_image(image_)) return;
        emit(item.handle, [&](Event& event) {
            EventWriter::refresh(event, ref(item), image_, refresh_.item_seq(), state, true, now);
        });
        return finish(item);
    }
    Item* item = names->second.streaming;
    if (!item) return refuse_orphan(refresh_);
    bind(*item, refresh_.item_id(), refresh_.service_id());
    if (item->sequencer.on_refresh(refresh_.item_seq(), monotonic_ns()) ==
        ItemSequencer::Verdict::kHold) {
        if (!take_image(item->held)) return;
        item->held_state = state;
        holding_.insert(item);
        return;
    }
    holding_.erase(item);
    if (!take_image(image_)) return;
    emit(item->handle, [&](Event& event) {
        EventWriter::refresh(event, ref(*item), image_, refresh_.item_seq(), state, false, now);
    });
    if (closed) finish(*item);
}

// A refresh nobody here asked for (unsubscribed while the request was under
// way): the server holds a subscription for it, so let it go.
void ConsumerCore::refuse_orphan(const wire::Refresh& refresh) {
    if (refresh.item_id() == 0 || refresh.status().stream_state() == wire::STREAM_CLOSED) return;
    if (by_id_.find(refresh.item_id())) return;
    wire::Unsubscribe request;
    request.add_item_ids(refresh.item_id());
    link_.send(FrameType::kUnsubscribe, request);
}

void ConsumerCore::on_item_status(const proto::Frame& frame) {
    wire::ItemStatus status;
    if (!status.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) {
        return link_.abort("malformed ItemStatus body");
    }
    const ItemState state = detail::to_item_state(status.status());
    Item* const bound = by_id_.find(status.item_id());
    const auto names = by_name_.find(item_key(status.service_name(), status.item_name()));
    std::vector<Item*> targets;
    // Snapshots waiting by name hear a status for the name (not found, recovering,
    // closed); a streaming item bound to the id hears what happens to its stream.
    if (names != by_name_.end() && (!bound || state.stream == StreamState::kClosed)) {
        targets.assign(names->second.snapshots.begin(), names->second.snapshots.end());
    }
    if (bound) {
        targets.push_back(bound);
    } else if (names != by_name_.end() && names->second.streaming) {
        Item* streaming = names->second.streaming;
        if (status.item_id() != 0) bind(*streaming, status.item_id(), status.service_id());
        targets.push_back(streaming);
    }
    for (Item* item : targets) apply_status(*item, state);
}

// One status for every item open on this connection in the scope (a service,
// or a distributor: item ids carry it), delivered to the application as that
// many item statuses, exactly as if each had come in its own ItemStatus.
void ConsumerCore::on_group_status(const proto::Frame& frame) {
    wire::GroupStatus group;
    if (!group.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) {
        return link_.abort("malformed GroupStatus body");
    }
    counters_.group_statuses.fetch_add(1, std::memory_order_relaxed);
    std::vector<Item*> targets;
    targets.reserve(group.item_count());
    by_id_.for_each([&](uint64_t item_id, Item* item) {
        const bool in_scope = group.scope() == wire::GROUP_SERVICE
                                  ? item->service_id == group.id()
                                  : proto::item_source(item_id) == group.id();
        if (in_scope) targets.push_back(item);
    });
    if (targets.size() != group.item_count()) {
        log_->debug("group status for {} items on the server, {} open here", group.item_count(),
                    targets.size());
    }
    const ItemState state = detail::to_item_state(group.status());
    for (Item* item : targets) apply_status(*item, state);  // may unbind: after the walk
}

void ConsumerCore::apply_status(Item& item, const ItemState& state) {
    if (state.code == StatusCode::kSourceReset) {
        // New distributor run: item ids are void, the source may restart the sequence.
        item.sequencer.on_source_reset();
        holding_.erase(&item);
        if (item.item_id != 0) by_id_.erase(item.item_id);
        item.item_id = 0;
    }
    const uint64_t now = read_time_ns();
    emit(item.handle, [&](Event& event) { EventWriter::status(event, ref(item), state, now); });
    if (state.stream == StreamState::kClosed) finish(item);
}

void ConsumerCore::on_directory(const proto::Frame& frame) {
    wire::Directory directory;
    if (!directory.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) {
        return link_.abort("malformed Directory body");
    }
    emit(ItemHandle{}, [&](Event& event) { EventWriter::directory(event, directory); });
}

// ---- item bookkeeping ----------------------------------------------------------------------

void ConsumerCore::bind(Item& item, uint64_t item_id, uint32_t service_id) {
    if (service_id != 0) item.service_id = service_id;
    if (item.item_id == item_id || item_id == 0) return;
    if (item.item_id != 0) by_id_.erase(item.item_id);
    item.item_id = item_id;
    by_id_.insert(item_id, &item);
}

void ConsumerCore::finish(Item& item) {
    const ItemHandle handle = item.handle;
    const auto names = by_name_.find(item.key);
    if (names != by_name_.end()) {
        auto& snapshots = names->second.snapshots;
        snapshots.erase(std::remove(snapshots.begin(), snapshots.end(), &item), snapshots.end());
        if (names->second.streaming == &item) names->second.streaming = nullptr;
        if (!names->second.streaming && snapshots.empty()) by_name_.erase(names);
    }
    if (item.item_id != 0) {
        if (by_id_.find(item.item_id) == &item) by_id_.erase(item.item_id);
    }
    holding_.erase(&item);
    items_.erase(handle.id);  // `item` is gone from here on
    finished_(handle);
}

// Held images that did not catch up in time are delivered as they are.
void ConsumerCore::on_housekeeping() {
    sample_clock_offset();
    if (holding_.empty()) return;
    const int64_t now = monotonic_ns();
    const int64_t timeout = int64_t{options_.catch_up_timeout_ms} * 1'000'000;
    std::vector<std::pair<Item*, uint64_t>> expired;  // with the sequence it did not reach
    for (Item* item : holding_) {
        const uint64_t wanted = item->sequencer.last_delivered();
        if (item->sequencer.hold_expired(now, timeout)) expired.emplace_back(item, wanted);
    }
    for (const auto& [expired_item, wanted] : expired) {
        Item* item = expired_item;  // a plain variable: clang 14 cannot capture a binding
        holding_.erase(item);
        log_->warn(
            "{}/{}: the image from {} did not catch up with sequence {} in {} ms; "
            "delivering it at {}",
            item->service, item->name, failover_.peer().to_string(), wanted,
            options_.catch_up_timeout_ms, item->sequencer.held_seq());
        emit(item->handle, [&](Event& event) {
            EventWriter::refresh(event, ref(*item), item->held, item->sequencer.held_seq(),
                                 item->held_state, false, now_ns());
        });
    }
}

}  // namespace mdcast::sdk
