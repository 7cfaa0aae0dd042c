// The fan-out room of the server: who holds which item, and the sending of
// item frames to them.
//
// It keeps the one book of subscriptions, read both ways: by item (clients
// grouped by view, the hot path) and by client (the items it holds and their
// views: limits, unsubscribe, reap, entitlement revocation, /stats). An update
// goes out as the backbone's own bytes to the group without a view and is
// encoded once per distinct view; images and statuses are encoded once per
// item (images once per view), in each encoding its subscribers use (binary,
// or JSON for WebSocket clients: one JSON encoding per view too). A conflating
// client's backlog is drained from the cache's current state. A subscription
// with a conflation interval (Subscribe.conflate_ms) gets at most one update
// per interval, the rest merged and sent when the interval ends
// (interval_conflation.h), on a timer of the fan-out's own. An update for a
// group of several subscribers is copied once, into a shared block, and
// queued to each of them by reference (common/net/shared_block.h).
//
// The server decides what happens to an item; Fanout only says it to the
// subscribers. It never talks upstream.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/net/event_loop.h"
#include "common/net/shared_block.h"
#include "proto/field_image.h"
#include "proto/update_codec.h"
#include "server/client_session.h"
#include "server/item_cache.h"
#include "server/subscription_table.h"
#include "wire/client.pb.h"

namespace mdcast::server {

struct FanoutCounters {
    uint64_t refreshes_out = 0;
    uint64_t updates_out = 0;
    uint64_t statuses_out = 0;
    uint64_t conflated_out = 0;             // frames sent from a conflation backlog
    uint64_t conflated_suspect_images = 0;  // drains that gave a suspect item its image
    uint64_t conflated_trades = 0;       // trades held for a conflating client, sent by its drain
    uint64_t json_update_encodings = 0;  // updates encoded to JSON: once per view, not client
    uint64_t paced_held = 0;      // updates merged for a conflate_ms subscription, not sent then
    uint64_t paced_out = 0;       // conflated updates sent when an interval ended
    uint64_t paced_trades = 0;    // trades that sent what was owed early, then themselves
    uint64_t paced_flushed = 0;   // of those, sent early because a status followed
    uint64_t shared_updates = 0;  // copied once into a shared block for a group
    uint64_t group_statuses_out = 0;  // GroupStatus frames: one per client per group event
    uint64_t group_status_items = 0;  // item statuses those frames stood for
    uint64_t unchanged_out = 0;       // resync answers: the subscriber's image is current
};

class Fanout {
  public:
    using Views = std::unordered_map<uint64_t, std::vector<uint32_t>>;  // item id -> view
    struct Subscriber {
        ClientSession* client;
        std::vector<uint32_t> view;
        uint32_t conflate_ms = 0;
    };

    // `cache` supplies the current state a conflating client is sent; `loop`
    // runs the conflation-interval timer.
    // It marks the items it is given subscribers of (CachedItem::subscribed_hint).
    Fanout(ItemCache& cache, EventLoop& loop);

    // ---- the subscription book ----
    // False when the client holds the item already (in any view): nothing changes.
    // `conflate_ms` > 0: at most one update per item per that many ms to this client.
    bool subscribe(ClientSession& client, uint64_t item_id, const std::vector<uint32_t>& view,
                   uint32_t conflate_ms = 0);
    // False when the client did not hold the item.
    bool unsubscribe(ClientSession& client, uint64_t item_id);
    // Removes every subscription to the item and returns who held it, with which view.
    std::vector<Subscriber> take_item(uint64_t item_id);
    // Removes every subscription of the client (it is gone).
    void drop_client(ClientSession& client);
    size_t subscription_count(const ClientSession& client) const;
    // The client's items and views; null when it holds none.
    const Views* subscriptions_of(const ClientSession& client) const;
    bool has_subscribers(uint64_t item_id) const { return by_item_.find(item_id) != nullptr; }
    std::vector<uint64_t> subscribed_items() const { return by_item_.item_ids(); }
    size_t subscribed_item_count() const { return by_item_.item_count(); }
    // Connection ids of the item's subscribers (for /items), in no particular order.
    std::vector<uint64_t> subscriber_ids(uint64_t item_id) const;

    // ---- sending ----
    // Hot path: the update just applied to `item`. `whole` is the frame as it came
    // from the backbone; `update` its parsed form, for the views.
    void fan_out_update(const CachedItem& item, const proto::UpdateView& update,
                        std::span<const uint8_t> whole);
    // The item's new image (unsolicited) to every subscriber; `image` holds its
    // fields (null: none, the cache is off and upstream sent none).
    void fan_out_image(const CachedItem& item, const proto::FieldImage* image);
    // The item's status to every subscriber.
    void fan_out_status(const CachedItem& item);
    // The statuses of many items that all changed to the same Status for one
    // reason (a service or a source down or reset): `message` (scope, id and
    // status) goes once to each client that takes group statuses and holds at
    // least one of `items`, after what its paced subscriptions owe; every other
    // subscriber (older clients, WebSocket) gets each item's status as from
    // fan_out_status. The items' cache state is already changed.
    void fan_out_group_status(const wire::GroupStatus& message,
                              const std::vector<const CachedItem*>& items);
    // A solicited image to one client: a snapshot (stream closed after it) or
    // the first image of a subscription.
    void send_image(ClientSession& client, const CachedItem& item, const proto::FieldImage* image,
                    const std::vector<uint32_t>& view, bool snapshot);
    // The resync answer for a subscription whose subscriber holds the item's
    // current image (Subscribe.known_seqs): an ItemStatus STATUS_UNCHANGED at
    // the item's sequence, in place of the image. A conflating client is owed
    // the image instead (its drain sends it).
    void send_unchanged(ClientSession& client, const CachedItem& item);
    // A status for a request that is not (or no longer) an open item.
    void send_status(ClientSession& client, const std::string& service, const std::string& name,
                     uint64_t item_id, const wire::Status& status);
    // A conflating client's queue drained: per item it is owed, the current state
    // from the cache (image, status, or one conflated update), as far as the queue
    // allows; the rest waits for the next drain.
    void drain(ClientSession& client);
    // Sends the conflated updates whose interval has ended by `now_ns` (the
    // timer calls it; tests call it with their own clock).
    void send_paced(int64_t now_ns);
    // Conflation intervals waiting to end (bounded by the conflated subscriptions).
    size_t paced_waiting() const { return paced_.size(); }

    const FanoutCounters& counters() const { return counters_; }

    // Frames built from an item's state (also used by the tests).
    static std::string image_frame(const CachedItem& item, const proto::FieldImage* image,
                                   const std::vector<uint32_t>& view, bool solicited,
                                   bool snapshot);
    static std::string status_frame(const CachedItem& item);
    // The item's current values as one update marked conflated.
    static proto::UpdateView conflated_update(const CachedItem& item);
    // The same, in the client's encoding (binary or JSON).
    static std::string image_frame_for(const ClientSession& client, const CachedItem& item,
                                       const proto::FieldImage* image,
                                       const std::vector<uint32_t>& view, bool solicited,
                                       bool snapshot);
    static std::string status_frame_for(const ClientSession& client, const CachedItem& item);

  private:
    using Group = SubscriptionTable<ClientSession>::Group;
    // Clients taking a group status, with the items it stands for to each.
    using GroupedClients = std::unordered_map<ClientSession*, std::vector<uint64_t>>;
    void fan_out_item_status(const CachedItem& item, GroupedClients* grouped);
    void flush_paced(uint64_t item_id, Group& group, int64_t& now_ns);
    struct PacedKey {
        uint64_t item_id;
        uint64_t group_serial;  // looked up again when due: the group may be gone
    };
    bool hold_for_interval(uint64_t item_id, Group& group, const proto::UpdateView& update,
                           int64_t& now_ns);
    std::string owed_frame(const ClientSession& client, const CachedItem& item,
                           const ConflationBacklog::Piece& piece,
                           const std::vector<uint32_t>& view);
    std::string state_frame(const ClientSession& client, const CachedItem& item,
                            ClientSession::Owed owed, const MergedUpdate& quotes,
                            const std::vector<uint32_t>& view);
    static std::string update_frame_for(const ClientSession& client,
                                        const proto::UpdateView& update,
                                        const std::vector<uint32_t>& view);
    void send_paced_update(uint64_t item_id, Group& group, int64_t now_ns);
    size_t deliver_update(uint64_t item_id, Group& group, const proto::UpdateView& update,
                          std::span<const uint8_t> frame);
    void on_image_to(Group& group, const ClientSession& client, const CachedItem& item);
    void arm_paced_timer();

    ItemCache& cache_;
    SubscriptionTable<ClientSession> by_item_;
    std::unordered_map<const ClientSession*, Views> by_client_;
    FanoutCounters counters_;
    std::string view_frame_;    // reused on the hot path: one allocation, not one per update
    SharedBlockWriter shared_;  // one copy of an update for a group's subscribers
    PacedQueue<PacedKey> paced_;
    Timer paced_timer_;
    int64_t paced_timer_due_ns_ = 0;  // when the armed timer fires (0: not armed)
};

}  // namespace mdcast::server
