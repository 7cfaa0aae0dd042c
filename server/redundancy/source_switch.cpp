// The server's side of redundant sources (docs/operations.md, "Redundancy"):
// when a redundancy group's active member changes (server/redundancy/
// service_groups.h), every subscribed item served by the old member moves to
// the new member's item of the same name, served from the image this server
// keeps of it (hot standby: no image request, no suspect status).
//  - A failover: the item follows the new member's under its own id and
//    sequence (server/redundancy/follow_standby.cpp); nothing is sent when
//    the values are the same, else one refresh at the next sequence.
//  - A switch back to a preferred member, still serving meanwhile: each
//    subscriber gets one refresh, unsolicited, with the new item id and the
//    new member's sequence; the SDK rebinds the name to the new id and takes
//    the refresh as its new base, so it sees no gap and no repeat.
// An item the new member has no current image of gets a status that says so,
// and moves when one arrives.
#include "common/clock.h"
#include "proto/source_ids.h"
#include "server/redundancy/redundancy_config.h"
#include "server/server.h"

namespace mdcast::server {

namespace {

std::string switch_text(const GroupSwitch& change) {
    return "service " + change.service + " moved from distributor " + std::to_string(change.from) +
           " to distributor " + std::to_string(change.to) + " (" +
           switch_reason_name(change.reason) + ")";
}

// The distributor whose messages reach the item's subscribers.
uint16_t feed_source(const CachedItem& item) {
    return proto::item_source(item.fed_by ? item.fed_by->id : item.id);
}

}  // namespace

std::optional<uint16_t> Server::active_source(const std::string& service) const {
    return groups_.active(service);
}

void Server::note_directory(uint16_t source, const wire::Directory& directory) {
    const int64_t now = monotonic_ns();
    for (const auto& info : directory.services()) {
        if (proto::service_source(info.service_id()) != source) continue;
        groups_.on_service(info.name(), source, info.state() == wire::SERVICE_UP, now);
    }
}

// The switches due now: their items queued (every item of the old member's
// service: the step skips those nobody subscribes to, and moves the items
// following them too), and the first slice of them moved at once (all of them
// when they fit: a small switch completes here).
void Server::apply_group_switches() {
    groups_.configure(source_rank(config_.redundancy_source_rank),
                      int64_t{config_.redundancy_hold_down_ms} * 1'000'000);
    const auto changes = groups_.evaluate(monotonic_ns());
    if (changes.empty()) return;
    for (const auto& change : changes) {
        const std::vector<CachedItem*>* items =
            cache_.items_of_service(change.service, change.from);
        switches_.add(change, items ? *items : std::vector<CachedItem*>{}, monotonic_ns());
    }
    run_switch_slice();
}

// Slices of the queued switches (redundancy.switch_slice_items each) for up to
// redundancy.switch_slice_us; the rest wait for the next loop iteration, after
// the clients' I/O.
void Server::run_switch_slice() {
    const auto step = [this](const GroupSwitch& change, CachedItem* item, SwitchQueue::Job& job) {
        switch_step(change, *item, job);
    };
    // What a step reads, fetched while the steps before it run: the items are
    // scattered over the heap, and a switch of 100,000 waits on memory.
    const auto ahead = [](CachedItem* item, int stage) {
        if (stage == 0) {  // the item
            for (size_t at = 0; at < sizeof(CachedItem); at += 64)
                __builtin_prefetch(reinterpret_cast<const char*>(item) + at);
            return;
        }
        // Loaded by now: what it points at (its fields, the other member's item).
        __builtin_prefetch(item->image.slots().data());
        for (CachedItem* other : {item->same_name, item->name_prev}) {
            if (other) __builtin_prefetch(other);
        }
    };
    const int64_t until = monotonic_ns() + int64_t{config_.redundancy_switch_slice_us} * 1000;
    do {
        for (const auto& job : switches_.run(config_.redundancy_switch_slice_items, step, ahead)) {
            note_switch_done(job);
        }
    } while (!switches_.empty() && monotonic_ns() < until);
    if (!switches_.empty()) return switch_timer_.start_once(std::chrono::microseconds(0));
    run_after_switches();
}

void Server::after_switches(std::function<void()> work) {
    if (switches_.empty()) return work();
    after_switches_.push_back(std::move(work));
}

void Server::run_after_switches() {
    auto due = std::move(after_switches_);
    after_switches_.clear();
    for (auto& work : due) work();
}

void Server::note_switch_done(const SwitchQueue::Job& job) {
    switch_counters_.items_switched += job.moved + job.unchanged;
    switch_counters_.items_unchanged += job.unchanged;
    switch_counters_.items_without_image += job.waiting;
    switch_counters_.last_done_unix_ns = realtime_ns();
    log_->warn(
        "{}: {} subscribed items switched ({} refreshed, {} with the same values: nothing sent), "
        "{} without a current image there ({:.1f} ms, {} slices)",
        switch_text(job.change), job.moved + job.unchanged, job.moved, job.unchanged, job.waiting,
        (monotonic_ns() - job.start_ns) / 1e6, job.slices);
}

// Every queued item moved now, in one pass: the source's item ids are about
// to be void (it restarted).
void Server::finish_switches() {
    const auto step = [this](const GroupSwitch& change, CachedItem* item, SwitchQueue::Job& job) {
        switch_step(change, *item, job);
    };
    for (const auto& job : switches_.run(0, step)) note_switch_done(job);
    switch_timer_.stop();
    run_after_switches();
}

// One queued item of the old member's service, and the item following it.
void Server::switch_step(const GroupSwitch& change, CachedItem& item, SwitchQueue::Job& job) {
    CachedItem* follower = item.feeds;  // before the item moves: it may follow another
    job.count(switch_item(change, item));
    if (follower) job.count(switch_item(change, *follower));
}

// One subscribed item of the service moves to the new member's item of that
// name, or its subscribers are told why it cannot (yet).
SwitchQueue::Outcome Server::switch_item(const GroupSwitch& change, CachedItem& item) {
    using Outcome = SwitchQueue::Outcome;
    CachedItem* const from = &item;
    if (feed_source(*from) != change.from || from->service_name != change.service ||
        (!from->subscribed_hint && !fanout_.has_subscribers(from->id)))
        return Outcome::kSkipped;  // another member's, moved already, or unsubscribed
    CachedItem* to = ItemCache::same_name_from(*from, change.to);
    const bool failover = change.reason != SwitchReason::kPreferred;
    if (to == from) {
        // It follows a standby, and its own source is back as the active member:
        // what this server held of that source's image was replaced.
        recovery_.request_image(*from);  // its refresh ends the link (own_image_while_following)
        if (!failover) return Outcome::kWaiting;  // still served by the standby meanwhile
        ItemCache::unfollow(*from);
        ItemCache::invalidate(*from, wire::STATUS_SOURCE_DOWN,
                              switch_text(change) + ", waiting for its fresh image of this item");
        fanout_.fan_out_status(*from);
        return Outcome::kWaiting;
    }
    if (to && has_current_image(*to) && cache_.keeps_images()) {
        if (failover && (!to->feeds || to->feeds == from)) return follow_standby(*from, *to);
        move_subscribers(*from, *to, &to->image);
        return Outcome::kMoved;
    }
    if (to) recovery_.request_image(*to);     // its subscribers move when the image comes
    if (!failover) return Outcome::kWaiting;  // still served
    ItemCache::unfollow(*from);
    ItemCache::invalidate(
        *from, wire::STATUS_SOURCE_DOWN,
        switch_text(change) + (to ? ", which has no current image of this item yet"
                                  : ", which does not publish this item"));
    fanout_.fan_out_status(*from);
    return Outcome::kWaiting;
}

// Every subscriber of `from` now holds `to` instead, and has its image.
void Server::move_subscribers(CachedItem& from, CachedItem& to, const proto::FieldImage* image) {
    ItemCache::unfollow(from);
    const bool first = !fanout_.has_subscribers(to.id);
    for (const auto& held : fanout_.take_item(from.id)) {
        if (!held.client->is_open()) continue;
        if (!fanout_.subscribe(*held.client, to.id, held.view, held.conflate_ms)) continue;
        // Subscribers of `to` already have its image: the movers get theirs one by one.
        if (!first) fanout_.send_image(*held.client, to, image, held.view, false);
    }
    if (first) fanout_.fan_out_image(to, image);  // encoded once per view, not per client
    recovery_.item_closed(from.id);
    release_if_unwatched(from.id);
    hold_if_interactive(to.id);
}

// An image of `item` arrived: if its distributor is its group's active member,
// the subscribers still on another member's item of that name move to it
// (a switch back completing, or an item the standby lacked at a switch).
void Server::adopt_subscribers(CachedItem& item, const proto::FieldImage* image) {
    CachedItem* first = cache_.find(item.service_name, item.name);
    if (!has_current_image(item) || (first == &item && !item.same_name)) return;  // the common case
    if (groups_.active(item.service_name) != proto::item_source(item.id)) return;
    for (CachedItem* other = first; other; other = other->same_name) {
        if (other != &item && other->fed_by != &item && fanout_.has_subscribers(other->id)) {
            move_subscribers(*other, item, image);
            ++switch_counters_.items_switched;
        }
    }
}

// A distributor heard again after silence, or past loss it could not repair:
// its items went suspect, and only the subscribed ones are re-imaged for their
// subscribers. The others of a service it shares with another distributor are
// a standby's, which must stay hot: they are re-imaged too, or the next switch
// to them would find no current image.
void Server::rewarm_standby(uint16_t source) {
    for (CachedItem* item : items_of_source(source, false)) {
        if (item->has_image || fanout_.has_subscribers(item->id) || recovery_.recovering(item->id))
            continue;
        const auto group = groups_.groups().find(item->service_name);
        if (group != groups_.groups().end() && group->second.members.size() >= 2)
            recovery_.request_image(*item);
    }
}

// The item a new subscriber is served: its group's active member's when that
// is current (or the item following it, so that its subscribers share one
// stream), else the best-ranked member's that is, else one with an image.
CachedItem* Server::serving_item(const std::string& service, const std::string& name) {
    CachedItem* first = cache_.find(service, name);
    if (!first || !first->same_name) return first;
    for (uint16_t source : groups_.ranked(service)) {
        CachedItem* item = cache_.find(service, name, source);
        if (item && has_current_image(*item)) return item->feeds ? item->feeds : item;
    }
    for (CachedItem* item = first; item; item = item->same_name) {
        if (item->has_image) return item;
    }
    return first;
}

}  // namespace mdcast::server
