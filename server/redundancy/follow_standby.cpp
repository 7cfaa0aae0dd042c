// A failover to a hot standby without a message per item (docs/operations.md,
// "Redundancy"): a subscribed item of the failed member stays its
// subscribers' item (same id, its own sequence continued) and is from then on
// fed by the new member's item of that name (CachedItem::fed_by). The switch
// sends nothing when the standby's values equal what the subscribers hold, and
// one unsolicited refresh at the item's next sequence when they differ; the
// standby's messages then reach them rewritten to the item's id and sequence.
//
// The follower's own source may come back. Its messages are not applied while
// the item follows another member (they would interleave two sequences): its
// updates and statuses are dropped, and its refresh ends the link only once
// that source is its group's active member again (the switch back asks it for
// one). A follower whose own source resets is moved to the member feeding it
// (its id is void), as any item is moved when switching back.
#include <algorithm>

#include "proto/source_ids.h"
#include "server/server.h"

namespace mdcast::server {

namespace {

// The sequence of a refresh to `follower`'s subscribers with `to`'s image:
// past what they have, and no lower than to's own (two distributors fed by one
// publisher share its sequence: it stays theirs).
uint64_t next_base(const CachedItem& follower, const CachedItem& to) {
    return std::max(follower.item_seq + 1, to.item_seq);
}

}  // namespace

// `from`'s subscribers are served `to` from now on, under from's id.
SwitchQueue::Outcome Server::follow_standby(CachedItem& from, CachedItem& to) {
    hold_if_interactive(to.id);
    if (!has_current_image(from) || !proto::same_values(from.image, to.image)) {
        refresh_follower(from, to);
        return SwitchQueue::Outcome::kMoved;
    }
    from.status = to.status;
    from.publish_time_ns = to.publish_time_ns;
    ItemCache::follow(from, to);
    return SwitchQueue::Outcome::kUnchanged;
}

// `to`'s image, state and sequence shift taken by `follower`, whose subscribers
// get it as an unsolicited refresh at their next sequence.
void Server::refresh_follower(CachedItem& follower, CachedItem& to) {
    follower.image = to.image;
    follower.item_seq = next_base(follower, to);
    follower.status = to.status;
    follower.has_image = to.has_image;
    follower.publish_time_ns = to.publish_time_ns;
    ItemCache::follow(follower, to);  // the shift from here on
    fanout_.fan_out_image(follower, &follower.image);
}

// `to` applied `update_` (its frame `whole`): its follower's subscribers get it.
void Server::feed_update(CachedItem& to, std::span<const uint8_t> whole) {
    CachedItem& follower = *to.feeds;
    const auto outcome = cache_.apply_followed(follower, update_);  // update_ now follower's
    if (outcome == ItemCache::Outcome::kApplied || outcome == ItemCache::Outcome::kBookFull) {
        rekeyed_.clear();
        proto::append_rekeyed_frame(rekeyed_, whole, follower.id, follower.item_seq);
        fanout_.fan_out_update(
            follower, update_,
            {reinterpret_cast<const uint8_t*>(rekeyed_.data()), rekeyed_.size()});
        if (outcome == ItemCache::Outcome::kBookFull) book_trouble(follower);
    } else if (outcome == ItemCache::Outcome::kItemGap) {
        fanout_.fan_out_status(follower);  // an image of `to` mends it (feed_image)
    }
}

// `to`'s status changed (suspect, closed, reset): its follower's subscribers
// are told the same under their item.
void Server::feed_status(CachedItem& to) {
    CachedItem& follower = *to.feeds;
    follower.status = to.status;
    follower.has_image = to.has_image;
    fanout_.fan_out_status(follower);
    if (to.status.stream_state() != wire::STREAM_CLOSED) return;
    ItemCache::unfollow(follower);
    fanout_.take_item(follower.id);
    recovery_.item_closed(follower.id);
}

void Server::feed_statuses(const std::vector<CachedItem*>& items) {
    for (CachedItem* item : items) {
        if (item->feeds) feed_status(*item);
    }
}

// A refresh from a follower's own source: taken (the link ended) once that
// source is its group's active member again, else dropped.
bool Server::own_image_while_following(CachedItem& item) {
    if (groups_.active(item.service_name) != proto::item_source(item.id)) {
        ++counters_.following_dropped;
        return false;
    }
    ItemCache::unfollow(item);
    item.has_image = false;  // its own source's image replaces the fed one, whatever the sequence
    ++switch_counters_.items_switched;  // back on its own source (a switch back completing)
    return true;
}

// The member feeding a follower whose own item ids are void (its source reset)
// takes its subscribers.
void Server::hand_followers_over(const std::vector<CachedItem*>& items) {
    for (CachedItem* item : items) {
        if (!item->fed_by) continue;
        CachedItem& feeder = *item->fed_by;
        move_subscribers(*item, feeder, &feeder.image);
        ++switch_counters_.items_switched;
    }
}

}  // namespace mdcast::server
