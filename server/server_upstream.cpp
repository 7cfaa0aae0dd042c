// The server's side of its upstream (server/upstream.h): each message is parsed
// once and applied to the cache, then handed to the fan-out (what subscribers
// are told) and to image recovery (what must be asked again upstream). Loss,
// silence and a distributor's restart are turned into statuses and fresh image
// requests. Nothing here knows how the messages travelled.
#include <algorithm>

#include "common/clock.h"
#include "proto/book_image.h"
#include "proto/limits.h"
#include "proto/source_ids.h"
#include "server/make_status.h"
#include "server/server.h"

namespace mdcast::server {

using proto::FrameType;

void Server::on_upstream_message(uint16_t source, const proto::Frame& frame) {
    switch (frame.type) {
        case FrameType::kUpdate:
            return on_update(source, frame);
        case FrameType::kRefresh:
            return on_refresh(source, frame);
        case FrameType::kItemStatus:
            return on_item_status(source, frame);
        case FrameType::kDirectory:
            return on_directory(source, frame);
        default:
            ++counters_.malformed_messages;
    }
}

// A distributor may only speak for its own items and services (ids carry its id).
bool Server::foreign(uint16_t source, uint64_t item_id) {
    if (item_id == 0 || proto::item_source(item_id) == source) return false;
    ++counters_.foreign_messages;
    return true;
}

// The hot path: parse once, merge once, then the same bytes to every subscriber.
void Server::on_update(uint16_t source, const proto::Frame& frame) {
    if (!proto::decode_update(frame.body, update_)) {
        ++counters_.malformed_messages;
        return;
    }
    if (foreign(source, update_.item_id)) return;
    ++counters_.updates_in;
    spinner_.on_work();
    const bool probe_due = hop_probe_.note_received(update_.publish_time_ns);
    CachedItem* item = nullptr;
    switch (cache_.apply_update(update_, item)) {
        case ItemCache::Outcome::kApplied:
            fanout_.fan_out_update(*item, update_, frame.whole);
            if (HopProbe::sampled(update_.publish_time_ns)) {
                member_lag_.note(item->service_id, item->service_name, update_.publish_time_ns,
                                 realtime_ns(), monotonic_ns());
            }
            if (item->feeds) feed_update(*item, frame.whole);
            break;
        case ItemCache::Outcome::kBookFull:  // subscribers get the update, then the suspect status
            fanout_.fan_out_update(*item, update_, frame.whole);
            book_trouble(*item);
            if (item->feeds) feed_update(*item, frame.whole);
            break;
        case ItemCache::Outcome::kItemGap:
            ++counters_.item_gaps;
            fanout_.fan_out_status(*item);
            if (item->feeds) feed_status(*item);
            recovery_.request_image(*item);
            break;
        case ItemCache::Outcome::kFollowing:
            ++counters_.following_dropped;
            break;
        default:
            ++counters_.updates_dropped;
    }
    // After the fan-out scheduled the subscribers' writes: the probe's flush follows them.
    if (probe_due) flusher_.schedule(hop_probe_);
}

void Server::on_refresh(uint16_t source, const proto::Frame& frame) {
    wire::Refresh refresh;
    if (!refresh.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size())) ||
        refresh.item_id() == 0 || refresh.item_name().empty()) {
        ++counters_.malformed_messages;
        return;
    }
    if (foreign(source, refresh.item_id())) return;
    ++counters_.refreshes_in;
    CachedItem* item = nullptr;
    auto outcome = cache_.apply_refresh(refresh, item);
    if (outcome == ItemCache::Outcome::kFollowing) {
        if (!own_image_while_following(*item)) return;
        outcome = cache_.apply_refresh(refresh, item);
    }
    if (outcome == ItemCache::Outcome::kLimitReached) {
        ++counters_.cache_full;
        // Said at the 1st, 2nd, 4th, 8th ... refusal: loud at once, bounded when it goes on.
        if ((counters_.cache_full & (counters_.cache_full - 1)) == 0) {
            log_->warn("cache.max_items ({}) reached: {} {} not cached ({} refused so far)",
                       cache_.max_items(), refresh.service_name(), refresh.item_name(),
                       counters_.cache_full);
        }
        wire::ItemStatus refused;
        refused.set_service_name(refresh.service_name());
        refused.set_item_name(refresh.item_name());
        *refused.mutable_status() =
            make_status(wire::STREAM_CLOSED, wire::DATA_SUSPECT, wire::STATUS_LIMIT_REACHED,
                        "cache.max_items reached on this server");
        return recovery_.status_arrived(refused);
    }
    if (outcome == ItemCache::Outcome::kBookRefused) {
        book_trouble(*item);
        if (item->feeds) feed_status(*item);
        return;
    }
    // With the cache off, the image sent on is the one just received.
    proto::FieldImage upstream;
    const proto::FieldImage* image = &item->image;
    if (!cache_.keeps_images()) {
        std::string why;
        proto::assign_refresh(upstream, refresh, proto::kMaxMapEntries, why);
        image = &upstream;
    }
    const bool applied =
        outcome == ItemCache::Outcome::kApplied || outcome == ItemCache::Outcome::kBookFull;
    if (applied) fanout_.fan_out_image(*item, image);
    if (outcome == ItemCache::Outcome::kBookFull) book_trouble(*item, false);
    serve_waiting(*item, image);
    adopt_subscribers(*item, image);
    if (applied && item->feeds && cache_.keeps_images()) refresh_follower(*item->feeds, *item);
}

// A book over cache.max_book_entries, or a refresh whose map was refused: counted,
// logged (at the 1st, 2nd, 4th ... time) and told to the item's subscribers.
void Server::book_trouble(const CachedItem& item, bool tell_subscribers) {
    const uint64_t n = ++counters_.book_limited;
    if ((n & (n - 1)) == 0) {
        log_->warn("book {} {}: {} ({} so far)", item.service_name, item.name, cache_.book_why(),
                   n);
    }
    if (tell_subscribers) fanout_.fan_out_status(item);
}

// Subscribers that waited by name for the item's image get it now.
void Server::serve_waiting(const CachedItem& item, const proto::FieldImage* image) {
    auto pending = recovery_.image_arrived(item);
    if (!pending) return;
    for (const auto& waiting : pending->waiting) {
        if (!waiting.client->is_open()) continue;
        if (!waiting.client->entitled(item.service_name, item.name)) {  // revoked while it waited
            refuse_not_entitled(*waiting.client, item.service_name, item.name, item.id);
            continue;
        }
        if (!waiting.snapshot) {
            fanout_.subscribe(*waiting.client, item.id, waiting.view, waiting.conflate_ms);
        }
        fanout_.send_image(*waiting.client, item, image, waiting.view, waiting.snapshot);
    }
    // Only snapshots waited: the lease the image request started is not wanted.
    release_if_unwatched(item.id);
}

std::optional<uint64_t> Server::held_sequence(uint64_t item_id) const {
    const CachedItem* item = cache_.find(item_id);
    if (!item || !item->has_image || !cache_.keeps_images()) return std::nullopt;
    return item->item_seq;
}

// The upstream says the image held here is current (a resync's answer,
// Subscribe.known_seqs). Believed only when this cache holds that very image;
// otherwise a fresh one is asked for, and the item stays as it is meanwhile.
bool Server::confirm_unchanged(const wire::ItemStatus& status) {
    CachedItem* item = cache_.find(status.item_id());
    if (!item) return false;
    if (held_sequence(item->id) != status.item_seq()) {
        ++counters_.unchanged_refused;
        recovery_.request_image(*item);
        return false;
    }
    ++counters_.unchanged_in;
    return true;
}

void Server::on_item_status(uint16_t source, const proto::Frame& frame) {
    wire::ItemStatus status;
    if (!status.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) {
        ++counters_.malformed_messages;
        return;
    }
    if (foreign(source, status.item_id())) return;
    ++counters_.statuses_in;
    if (status.status().code() == wire::STATUS_UNCHANGED && !confirm_unchanged(status)) return;
    CachedItem* item = nullptr;
    const auto outcome = status.item_id() != 0 ? cache_.apply_status(status, item)
                                               : ItemCache::Outcome::kUnknownItem;
    if (outcome == ItemCache::Outcome::kFollowing) ++counters_.following_dropped;
    if (outcome == ItemCache::Outcome::kApplied) {
        fanout_.fan_out_status(*item);
        if (item->feeds) feed_status(*item);
        if (status.status().stream_state() == wire::STREAM_CLOSED) {
            fanout_.take_item(item->id);
            recovery_.item_closed(item->id);
        }
    }
    recovery_.status_arrived(status);
}

// A NOT_FOUND the distributor sent to this server alone: it closes the names
// waiting here; nothing else (no cached item, no other server) is touched.
void Server::on_source_answer(uint16_t, const proto::Frame& frame) {
    wire::ItemStatus status;
    if (!status.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size())) ||
        status.item_id() != 0 || status.status().stream_state() != wire::STREAM_CLOSED ||
        (status.status().code() != wire::STATUS_NOT_FOUND &&
         status.status().code() != wire::STATUS_LIMIT_REACHED)) {
        ++counters_.malformed_messages;
        return;
    }
    // LIMIT_REACHED: a name of an interactive service refused over the
    // distributor's bounds on names awaiting their source.
    ++(status.status().code() == wire::STATUS_NOT_FOUND ? counters_.not_found_in
                                                        : counters_.refused_in);
    recovery_.status_arrived(status);
}

void Server::on_directory(uint16_t source, const proto::Frame& frame) {
    wire::Directory directory;
    if (!directory.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) {
        ++counters_.malformed_messages;
        return;
    }
    const auto change = recovery_.on_directory(source, directory);
    counters_.foreign_messages += change.foreign;
    note_directory(source, directory);
    // Subscribers move to a standby first; the other items are told after.
    apply_group_switches();
    for (const auto& info : change.went_down) {
        after_switches([this, source, id = info.service_id(), name = info.name()] {
            service_went_down(source, id, name);
        });
    }
}

namespace {

// Told already (by a switch that could not move it): said once.
bool told_source_down(const CachedItem& item) {
    return item.status.code() == wire::STATUS_SOURCE_DOWN &&
           item.status.data_state() == wire::DATA_SUSPECT;
}

}  // namespace

// The service's items still shown ok go suspect: not those following another
// member (a switch moved them), nor those a switch told why it could not.
void Server::service_went_down(uint16_t source, uint32_t service_id, const std::string& name) {
    if (!groups_.listed_down(name, source)) return;  // up again before its turn came
    const std::string text = "service " + name + " is down: its source went away";
    std::vector<CachedItem*> items;
    cache_.for_each([&](CachedItem& item) {
        if (item.service_id != service_id || item.fed_by || told_source_down(item)) return;
        ItemCache::invalidate(item, wire::STATUS_SOURCE_DOWN, text);
        items.push_back(&item);
    });
    fan_out_group(wire::GROUP_SERVICE, service_id, name, items);
    feed_statuses(items);
}

// Items that all took the same new status for one reason: their subscribers
// are told once per client where the client takes group statuses.
void Server::fan_out_group(wire::GroupScope scope, uint32_t id, const std::string& service_name,
                           const std::vector<CachedItem*>& items) {
    if (items.empty()) return;
    wire::GroupStatus message;
    message.set_scope(scope);
    message.set_id(id);
    message.set_service_name(service_name);
    *message.mutable_status() = items.front()->status;
    fanout_.fan_out_group_status(message, {items.begin(), items.end()});
}

// The items of `source` in the cache; `followers` false: not those following
// another member (their source's messages are not theirs meanwhile).
std::vector<CachedItem*> Server::items_of_source(uint16_t source, bool followers) {
    std::vector<CachedItem*> items;
    cache_.for_each([&](CachedItem& item) {
        if (proto::item_source(item.id) == source && (followers || !item.fed_by))
            items.push_back(&item);
    });
    return items;
}

void Server::on_source_loss(uint16_t source, const std::string& what) {
    // Any item of that distributor may have missed updates in what could not be
    // repaired: each one holding an image goes suspect (its subscribers told
    // once), and each subscribed one is re-imaged, once until its image comes.
    // Loss upon loss while images are on their way (a starved server losing a
    // thousand runs a second) costs nothing more: no re-image storm that would
    // itself cause more loss, and the stream recovers.
    std::vector<CachedItem*> told;
    for (CachedItem* item : items_of_source(source, false)) {
        const bool had_image = item->has_image;
        if (had_image) ItemCache::invalidate(*item, wire::STATUS_UNRECOVERABLE_LOSS, what);
        if (!fanout_.has_subscribers(item->id) && !item->feeds) continue;
        if (had_image) told.push_back(item);
        if (recovery_.recovering(item->id)) {
            ++counters_.loss_reimages_merged;
        } else {
            recovery_.request_image(*item);
        }
    }
    fan_out_group(wire::GROUP_SOURCE, source, "", told);
    feed_statuses(told);
    rewarm_standby(source);
}

void Server::on_source_reset(uint16_t source, uint64_t previous_epoch, uint64_t epoch) {
    recovery_.forget_source(source);
    groups_.on_source_reset(source);
    if (previous_epoch == 0) return;  // first heard
    // Subscribers move to a standby first, all of them now (the old item ids
    // are void below); the rest wait for the restarted source.
    apply_group_switches();
    finish_switches();
    // Item ids of the old epoch are void: tell subscribers, then wait for the
    // new source's images by name.
    const wire::Status reset =
        make_status(wire::STREAM_OPEN, wire::DATA_SUSPECT, wire::STATUS_SOURCE_RESET,
                    "the distributor restarted; waiting for a fresh image");
    const std::vector<CachedItem*> items = items_of_source(source, true);
    hand_followers_over(items);  // their ids are void: the member feeding them takes them
    for (CachedItem* item : items) item->status = reset;
    fan_out_group(wire::GROUP_SOURCE, source, "", items);
    feed_statuses(items);
    for (CachedItem* item : items) {
        for (auto& held : fanout_.take_item(item->id)) {
            recovery_.resubscribe(
                *item, PendingSubscriber{held.client, false, held.view, held.conflate_ms});
        }
        cache_.erase(item->id);
    }
    recovery_.retry_all_now();
    log_->warn(
        "distributor {} reset: epoch {:016x} -> {:016x}; {} item names waiting for new images",
        source, previous_epoch, epoch, recovery_.pending_count());
}

void Server::on_source_silent(uint16_t source, bool silent) {
    groups_.on_source_silent(source, silent, monotonic_ns());
    if (!silent) {
        recovery_.on_source_heard_again(source, fanout_.subscribed_items());
        return rewarm_standby(source);
    }
    // Subscribers move to a standby first; the other items are told after.
    apply_group_switches();
    after_switches([this, source] { source_went_silent(source); });
}

// The source's items still shown ok go suspect: not those following another
// member (a switch moved them), nor those a switch told why it could not.
void Server::source_went_silent(uint16_t source) {
    if (!groups_.silent(source)) return;  // heard again before its turn came
    std::vector<CachedItem*> items = items_of_source(source, false);
    std::erase_if(items, [](const CachedItem* item) { return told_source_down(*item); });
    for (CachedItem* item : items) {
        ItemCache::invalidate(*item, wire::STATUS_SOURCE_DOWN,
                              "no packets from the distributor for backbone.source_silent_ms");
    }
    fan_out_group(wire::GROUP_SOURCE, source, "", items);
    feed_statuses(items);
}

void Server::on_source_ready(uint16_t source) {
    upstream_->query_directory(source);  // pending names are routed when its directory arrives
}

}  // namespace mdcast::server
