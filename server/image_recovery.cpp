#include "server/image_recovery.h"

#include <algorithm>

#include "common/clock.h"
#include "common/logging.h"
#include "proto/source_ids.h"
#include "server/make_status.h"

namespace mdcast::server {

ImageRecovery::ImageRecovery(const ItemCache& cache, const Settings& settings, Link& link)
    : cache_(cache),
      settings_(settings),
      link_(link),
      pending_(settings.max_pending, settings.max_pending_per_client,
               settings.max_pending_per_service),
      log_(log::get("server")) {}

// ---- asking --------------------------------------------------------------------------------

// The request cannot wait for its image: cache.max_pending_requests are
// waiting already, or this client's share of them, or its service's.
void ImageRecovery::refuse_full(const PendingSubscriber& subscriber, const std::string& service,
                                const std::string& name, uint64_t item_id, const std::string& when,
                                PendingRequests::AddResult why) {
    const std::string limit = pending_limit_text(service, why);
    const uint64_t refused = count_refusal(why);
    // Said at the 1st, 2nd, 4th, 8th ... refusal of each limit: loud at once, never a flood.
    if ((refused & (refused - 1)) == 0) {
        log_->warn("refused a subscription to {} of service {}: {} [{} refused so far]",
                   log::escaped(name), log::escaped(service), limit, refused);
    }
    link_.tell_waiting(subscriber, service, name, item_id,
                       make_status(wire::STREAM_CLOSED, wire::DATA_SUSPECT,
                                   wire::STATUS_LIMIT_REACHED, limit + when));
}

std::string ImageRecovery::pending_limit_text(const std::string& service,
                                              PendingRequests::AddResult why) const {
    switch (why) {
        case PendingRequests::AddResult::kClientLimitReached:
            return "cache.max_pending_requests_per_client (" +
                   std::to_string(pending_.max_per_client()) +
                   ") reached: this connection waits for that many images already";
        case PendingRequests::AddResult::kServiceLimitReached:
            return "cache.max_pending_requests_per_service (" +
                   std::to_string(pending_.max_per_service()) + ") reached: that many names of " +
                   service + " wait for an image already";
        default:
            return "cache.max_pending_requests reached";
    }
}

uint64_t ImageRecovery::count_refusal(PendingRequests::AddResult why) {
    switch (why) {
        case PendingRequests::AddResult::kClientLimitReached:
            return ++counters_.client_limit_refusals;
        case PendingRequests::AddResult::kServiceLimitReached:
            return ++counters_.service_limit_refusals;
        default:
            return ++counters_.table_limit_refusals;
    }
}

void ImageRecovery::wait_by_name(const std::string& service, const std::string& name,
                                 PendingSubscriber subscriber) {
    PendingImage* pending = nullptr;
    const auto added = pending_.add(service, name, subscriber, pending);
    switch (added) {
        case PendingRequests::AddResult::kFirst:
            switch (route(*pending)) {
                case Route::kNoSuchService:
                    return close_unroutable(service, name);
                case Route::kWaiting:
                    // Asked before any source could answer: it waits for the
                    // service to appear (not closed by the first directory
                    // that lacks it, e.g. a distributor up before its publisher).
                    pending->recovering = true;
                    return tell_no_source_yet(subscriber, service, name);
                case Route::kSent:
                    return;
            }
            return;
        case PendingRequests::AddResult::kJoined:
            if (pending->attempts == 0) tell_no_source_yet(subscriber, service, name);
            return;
        case PendingRequests::AddResult::kLimitReached:
        case PendingRequests::AddResult::kClientLimitReached:
        case PendingRequests::AddResult::kServiceLimitReached:
            return refuse_full(subscriber, service, name, 0, "", added);
    }
}

// Nothing upstream can be asked yet (no distributor heard, or not every one
// has sent its directory): the subscriber hears so at once, and keeps waiting
// (open/suspect) for the image, however long its service takes to appear.
void ImageRecovery::tell_no_source_yet(const PendingSubscriber& subscriber,
                                       const std::string& service, const std::string& name) {
    ++counters_.waiting_for_source;
    link_.tell_waiting(
        subscriber, service, name, 0,
        make_status(wire::STREAM_OPEN, wire::DATA_SUSPECT, wire::STATUS_SOURCE_DOWN,
                    "no source for service " + service + " yet; the image follows when one is up"));
}

void ImageRecovery::wait_for_image(const CachedItem& item, PendingSubscriber subscriber) {
    PendingImage* waiting = nullptr;
    const auto added = pending_.add(item.service_name, item.name, subscriber, waiting);
    switch (added) {
        case PendingRequests::AddResult::kFirst:
            request_image(item);
            waiting->last_request_ns = monotonic_ns();
            waiting->attempts = 1;
            return;
        case PendingRequests::AddResult::kJoined:
            return;
        case PendingRequests::AddResult::kLimitReached:
        case PendingRequests::AddResult::kClientLimitReached:
        case PendingRequests::AddResult::kServiceLimitReached:
            return refuse_full(subscriber, item.service_name, item.name, 0, "", added);
    }
}

bool ImageRecovery::send_by_id(uint64_t item_id, uint32_t service_id) {
    wire::ImageRequest request;
    request.set_item_id(item_id);
    request.set_service_id(service_id);
    return link_.send_image_request(proto::item_source(item_id), request);
}

void ImageRecovery::request_image(const CachedItem& item) {
    recovering_.insert(item.id);
    send_by_id(item.id, item.service_id);
}

void ImageRecovery::retry_all_now() {
    for (PendingImage* pending : pending_.all()) pending->last_request_ns = 0;
}

// The distributor whose directory lists `service`: of several, the active
// member of its redundancy group.
std::optional<uint16_t> ImageRecovery::service_source(const std::string& service) const {
    std::optional<uint16_t> found;
    for (const auto& [id, info] : directory_) {
        if (info.name() != service) continue;
        if (!found || link_.active_source(service) == proto::service_source(id))
            found = proto::service_source(id);
    }
    return found;
}

// Sends the image request for a name to the distributor that has its service.
// kNoSuchService when every distributor heard has sent its directory and none
// lists the service, nor ever did (a recovering subscription, or one for a
// service gone with a restarting distributor, keeps waiting instead).
ImageRecovery::Route ImageRecovery::route(PendingImage& pending) {
    if (const auto source = service_source(pending.service_name)) {
        wire::ImageRequest request;
        request.set_service_name(pending.service_name);
        request.set_item_name(pending.item_name);
        if (link_.send_image_request(*source, request)) {
            pending.last_request_ns = monotonic_ns();
            ++pending.attempts;
        }
        return Route::kSent;
    }
    const auto heard = link_.upstream_sources();
    const bool all_known =
        !heard.empty() && std::all_of(heard.begin(), heard.end(), [&](uint16_t s) {
            return sources_with_directory_.contains(s);
        });
    const bool known_before = services_seen_.contains(pending.service_name);
    return all_known && !pending.recovering && !known_before ? Route::kNoSuchService
                                                             : Route::kWaiting;
}

void ImageRecovery::route(const std::vector<PendingImage*>& entries) {
    std::vector<std::pair<std::string, std::string>> unroutable;
    for (PendingImage* pending : entries) {
        if (route(*pending) == Route::kNoSuchService) {
            unroutable.emplace_back(pending->service_name, pending->item_name);
        }
    }
    for (const auto& [service, name] : unroutable) close_unroutable(service, name);
}

void ImageRecovery::close_unroutable(const std::string& service, const std::string& name) {
    wire::ItemStatus status;
    status.set_service_name(service);
    status.set_item_name(name);
    *status.mutable_status() = make_status(wire::STREAM_CLOSED, wire::DATA_SUSPECT,
                                           wire::STATUS_NOT_FOUND, "no such service");
    status_arrived(status);
}

// ---- answers from upstream -----------------------------------------------------------------

std::optional<PendingImage> ImageRecovery::image_arrived(const CachedItem& item) {
    if (item.has_image) recovering_.erase(item.id);  // applied, or an answer we already had
    return pending_.take(item.service_name, item.name);
}

void ImageRecovery::status_arrived(const wire::ItemStatus& status) {
    if (status.status().stream_state() != wire::STREAM_CLOSED) {
        return;  // still open (e.g. recovering): keep waiting; retries tell them if it drags on
    }
    auto pending = pending_.take(status.service_name(), status.item_name());
    if (!pending) return;
    if (pending->recovering && status.status().code() == wire::STATUS_NOT_FOUND) {
        // The source has not re-registered since the reset: keep waiting (the
        // subscribers already hold a suspect status) for its refresh.
        return pending_.restore(std::move(*pending));
    }
    for (const auto& waiting : pending->waiting) {
        link_.tell_waiting(waiting, status.service_name(), status.item_name(), status.item_id(),
                           status.status());
    }
}

// ---- the distributors ----------------------------------------------------------------------

ImageRecovery::DirectoryChange ImageRecovery::on_directory(uint16_t source,
                                                           const wire::Directory& directory) {
    DirectoryChange change;
    sources_with_directory_.insert(source);
    for (const auto& info : directory.services()) {
        if (proto::service_source(info.service_id()) != source) {
            ++change.foreign;
            continue;
        }
        const auto previous = directory_.find(info.service_id());
        if (previous == directory_.end() || previous->second.state() != info.state()) {
            log_->info("service {} ({}) is {}", log::escaped(info.name()), info.service_id(),
                       info.state() == wire::SERVICE_UP ? "up" : "down");
        }
        if (info.state() == wire::SERVICE_DOWN &&
            (previous == directory_.end() || previous->second.state() == wire::SERVICE_UP)) {
            change.went_down.push_back(info);
        }
        directory_[info.service_id()] = info;
        if (services_seen_.size() < kMaxServicesSeen) services_seen_.insert(info.name());
    }
    // Names that were waiting for a directory naming their service.
    std::vector<PendingImage*> unsent;
    for (PendingImage* pending : pending_.all()) {
        if (pending->attempts == 0) unsent.push_back(pending);
    }
    route(unsent);
    return change;
}

void ImageRecovery::forget_source(uint16_t source) {
    std::erase_if(directory_,
                  [&](const auto& entry) { return proto::service_source(entry.first) == source; });
    sources_with_directory_.erase(source);
    std::erase_if(recovering_, [&](uint64_t id) { return proto::item_source(id) == source; });
}

void ImageRecovery::resubscribe(const CachedItem& item, PendingSubscriber subscriber) {
    PendingImage* pending = nullptr;
    const auto added = pending_.add(item.service_name, item.name, subscriber, pending);
    if (pending) {
        pending->recovering = true;
    } else {
        refuse_full(subscriber, item.service_name, item.name, item.id, " during recovery", added);
    }
}

void ImageRecovery::on_source_heard_again(uint16_t source,
                                          const std::vector<uint64_t>& subscribed) {
    for (uint64_t id : subscribed) {
        const CachedItem* item = cache_.find(id);
        // A redundancy follower's image is another member's (server/redundancy/).
        if (item && !item->fed_by && proto::item_source(id) == source) request_image(*item);
    }
}

// ---- retries -------------------------------------------------------------------------------

void ImageRecovery::on_timer(int64_t now) {
    const int64_t timeout = settings_.request_timeout_ns;
    const auto overdue = pending_.overdue(now, timeout);
    for (PendingImage* pending : overdue) {
        if (pending->attempts >= 2 && !pending->told_recovering) {
            pending->told_recovering = true;
            const auto status =
                make_status(wire::STREAM_OPEN, wire::DATA_SUSPECT, wire::STATUS_RECOVERING,
                            "no image from upstream yet; still asking");
            for (const auto& waiting : pending->waiting) {
                link_.tell_waiting(waiting, pending->service_name, pending->item_name, 0, status);
            }
        }
    }
    route(overdue);
    if (now - last_recovery_request_ns_ < timeout) return;
    last_recovery_request_ns_ = now;
    for (uint64_t id : recovering_) {
        if (const CachedItem* item = cache_.find(id)) send_by_id(item->id, item->service_id);
    }
}

}  // namespace mdcast::server
