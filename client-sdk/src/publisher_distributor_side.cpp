// The publisher's conversation with a distributor (docs/sdk.md, "A complete publisher"):
// it announces its services and registers their items, and handles what the
// distributor answers or asks: item ids, refusals, interactive requests and
// closes, and flushes. Posts are answered in publisher_posts.cpp.
#include <algorithm>

#include "event_writer.h"
#include "guarded_call.h"
#include "publisher_core.h"

namespace mdcast::sdk {

using proto::FrameType;
namespace wire = mdcast::wire::v1;

namespace {

constexpr size_t kRegisterBatch = 1000;
// An ItemRegister entry's bytes besides its name: tags, lengths, the ref.
constexpr size_t kRegisterEntryBytes = 24;

}  // namespace

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

}  // namespace mdcast::sdk
