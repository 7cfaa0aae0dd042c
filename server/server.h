// The fanout server process (one instance of possibly several on a host): owns
// the event loop's components and implements the item side of the protocol.
//
//   upstream (the backbone) -> ItemCache (parse once, merge) -> Fanout -> clients
//                              ImageRecovery (images asked upstream, retried)
//                              InterestReporter (interactive items held / released upstream)
//
// An update is parsed once to apply it to the cache; subscribers without a view
// get the exact bytes from upstream, and each distinct view is encoded once.
// Loss, a source going down, or a distributor restart reach every affected
// subscriber as a suspect status, followed by a fresh image when one arrives.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/auth/authenticator.h"
#include "common/daemon/admin_http.h"
#include "common/daemon/daemon_listeners.h"
#include "common/daemon/peer_table.h"
#include "common/metrics.h"
#include "common/net/event_loop.h"
#include "common/net/flush_scheduler.h"
#include "common/net/hop_probe.h"
#include "common/net/output_pool.h"
#include "common/net/spin_poll.h"
#include "server/backbone/interest_reporter.h"
#include "server/client_session.h"
#include "server/fanout.h"
#include "server/image_recovery.h"
#include "server/item_cache.h"
#include "server/post_router.h"
#include "server/redundancy/member_lag.h"
#include "server/redundancy/service_groups.h"
#include "server/redundancy/switch_queue.h"
#include "server/server_config.h"
#include "server/upstream.h"
#include "server/websocket/json_protocol.h"
#include "server/websocket/ws_session.h"

namespace mdcast::server {

struct ServerCounters {
    uint64_t refreshes_in = 0;
    uint64_t updates_in = 0;
    uint64_t statuses_in = 0;
    uint64_t not_found_in = 0;          // unicast NOT_FOUND answers to this server
    uint64_t refused_in = 0;            // unicast LIMIT_REACHED answers to this server
    uint64_t loss_reimages_merged = 0;  // loss hit an item whose image was on its way already
    uint64_t malformed_messages = 0;
    uint64_t foreign_messages = 0;  // a distributor speaking for another's items: dropped
    uint64_t updates_dropped = 0;   // stale, no image, unknown item
    uint64_t item_gaps = 0;
    // Messages of a redundancy follower's own source, not applied while it
    // follows another member (server/redundancy/follow_standby.cpp).
    uint64_t following_dropped = 0;
    uint64_t slow_consumers = 0;       // disconnected by the policy
    uint64_t conflation_episodes = 0;  // clients that started conflating
    uint64_t trades_held = 0;          // by clients since closed, while conflating
    uint64_t held_trade_limit = 0;     // clients closed past output.max_held_trades
    uint64_t links_cut_slow = 0;       // cascade links closed slow_consumer (a hard bound)
    uint64_t unchanged_in = 0;         // resync answers that made a held image current again
    uint64_t unchanged_refused = 0;    // resync answers for an image not held here: re-imaged
    uint64_t cache_full = 0;
    uint64_t book_limited = 0;  // books over cache.max_book_entries, book refreshes refused
    uint64_t not_entitled = 0;  // item requests refused: not entitled
    uint64_t entitlement_revocations = 0;     // subscriptions closed by a reload
    uint64_t users_removed = 0;               // clients closed: user gone from the users file
    uint64_t user_connections_refused = 0;    // logins over clients.max_connections_per_user
    uint64_t user_subscriptions_refused = 0;  // items over clients.max_subscriptions_per_user
    // Totals of clients already gone; live clients are added when reporting.
    uint64_t closed_bytes_out = 0;
    uint64_t closed_writes = 0;
};

// The go-between: the upstream's events and the clients' requests arrive here
// and are handed to the rooms that own the state (ItemCache, Fanout,
// ImageRecovery), which never call one another. The upstream (the multicast
// backbone) is reached only through server/upstream.h.
class Server final : public Upstream::Handler,
                     public ClientSession::Owner,
                     private ImageRecovery::Link,
                     private InterestReporter::Link,
                     private PostRouter::Link {
  public:
    // Binds every socket; throws std::runtime_error naming what failed. `config` is
    // the running configuration, kept by reference: it outlives the daemon, and a
    // SIGHUP copies the keys that reload into it (daemon_main's reload_daemon).
    Server(EventLoop& loop, const ServerConfig& config);
    ~Server();

    // Stops accepting, tells every client (so the SDK fails over at once) behind
    // what is queued for it, and stops the loop once all is written or
    // shutdown.grace_ms passed; a second call stops at once.
    void shutdown(const std::string& why);
    // SIGHUP: re-reads the users and certificate files; of `changes` (the changed
    // keys whose schema rows reload) says which failed to load or need a restart.
    config::ReloadResult reload(const ServerConfig& fresh,
                                const std::vector<config::ConfigChange>& changes);
    uint16_t client_port() const { return listeners_.port(); }
    uint16_t client_tls_port() const { return listeners_.tls_port(); }
    // The WebSocket/JSON port; 0 when clients.ws_port is off.
    uint16_t ws_port() const;

    // The upstream's events (server/server_upstream.cpp).
    void on_upstream_message(uint16_t source, const proto::Frame& frame) override;
    void on_source_loss(uint16_t source, const std::string& what) override;
    void on_source_reset(uint16_t source, uint64_t previous_epoch, uint64_t epoch) override;
    void on_source_ready(uint16_t source) override;
    void on_source_silent(uint16_t source, bool silent) override;
    void on_source_answer(uint16_t source, const proto::Frame& frame) override;
    void on_source_post_ack(uint16_t source, const wire::PostAck& ack) override;
    std::optional<uint64_t> held_sequence(uint64_t item_id) const override;

    void on_login_request(ClientSession& client, const wire::LoginRequest& request) override;
    void on_subscribe(ClientSession& client, const wire::Subscribe& request) override;
    void on_unsubscribe(ClientSession& client, uint64_t item_id) override;
    void on_directory_request(ClientSession& client) override;
    void on_post(ClientSession& client, const wire::Post& post) override {
        post_from_session(client, post);
    }
    // A post from any session (binary or WebSocket): checked, sent upstream,
    // and answered with a PostAck to that session (server/server_posts.cpp).
    void post_from_session(ClientSession& client, const wire::Post& post);
    void on_client_closed(ClientSession& client, CloseReason reason,
                          const std::string& text) override;
    void on_client_drained(ClientSession& client) override { fanout_.drain(client); }
    size_t subscription_count(const ClientSession& client) const override {
        return fanout_.subscription_count(client);
    }

  private:
    // ImageRecovery::Link
    bool send_image_request(uint16_t source, const wire::ImageRequest& request) override {
        return upstream_->request_image(source, request);
    }
    std::vector<uint16_t> upstream_sources() const override { return upstream_->sources(); }
    std::optional<uint16_t> active_source(const std::string& service) const override;
    void tell_waiting(const PendingSubscriber& waiting, const std::string& service,
                      const std::string& name, uint64_t item_id,
                      const wire::Status& status) override {
        fanout_.send_status(*waiting.client, service, name, item_id, status);
    }

    // InterestReporter::Link
    bool send_interest(uint16_t source, wire::Interest& interest) override {
        return upstream_->send_interest(source, interest);
    }
    // PostRouter::Link (server/server_posts.cpp)
    bool source_ready(uint16_t source) const override { return upstream_->ready(source); }
    bool send_post(uint16_t source, wire::Post& post) override {
        return upstream_->send_post(source, post);
    }
    void answer_client(uint64_t client_id, const wire::PostAck& ack) override;
    std::optional<wire::PostAck> check_post_target(const ClientSession& client,
                                                   const wire::Post& post) const;

    // Interest in interactive items (server/backbone/server_interest.cpp).
    bool interactive(uint64_t item_id) const;
    bool released_on_purpose(const CachedItem& item) const;
    // Cached items not DATA_OK: those released on purpose (`released`) or the others.
    size_t count_not_current(bool released);
    void hold_if_interactive(uint64_t item_id);
    void release_if_unwatched(uint64_t item_id);
    void release_items_of(ClientSession& client);
    std::vector<uint64_t> held_interactive_items() const;
    void report_interest(int64_t now);

    void on_accept(int fd, std::string peer, bool tls, bool websocket);
    // The image a resyncing subscriber still holds (Subscribe.known_seqs; 0: none).
    struct HeldImage {
        uint64_t item_id = 0;
        uint64_t item_seq = 0;
    };
    void subscribe_one(ClientSession& client, const std::string& service, const std::string& name,
                       uint32_t conflate_ms, bool snapshot, const std::vector<uint32_t>& view,
                       HeldImage held);
    // True when the item is current and still at the image `held` names.
    static bool still_current(const CachedItem& item, HeldImage held);

    // The upstream's messages (server/server_upstream.cpp).
    bool foreign(uint16_t source, uint64_t item_id);
    void on_refresh(uint16_t source, const proto::Frame& frame);
    void on_update(uint16_t source, const proto::Frame& frame);
    void on_item_status(uint16_t source, const proto::Frame& frame);
    bool confirm_unchanged(const wire::ItemStatus& status);
    void on_directory(uint16_t source, const proto::Frame& frame);
    void serve_waiting(const CachedItem& item, const proto::FieldImage* image);
    void book_trouble(const CachedItem& item, bool tell_subscribers = true);
    void fan_out_group(wire::GroupScope scope, uint32_t id, const std::string& service_name,
                       const std::vector<CachedItem*>& items);
    void service_went_down(uint16_t source, uint32_t service_id, const std::string& name);
    void source_went_silent(uint16_t source);
    std::vector<CachedItem*> items_of_source(uint16_t source, bool followers);

    // Redundant sources (server/redundancy/source_switch.cpp).
    void note_directory(uint16_t source, const wire::Directory& directory);
    void apply_group_switches();
    void run_switch_slice();
    void finish_switches();
    void note_switch_done(const SwitchQueue::Job& job);
    void switch_step(const GroupSwitch& change, CachedItem& item, SwitchQueue::Job& job);
    SwitchQueue::Outcome switch_item(const GroupSwitch& change, CachedItem& item);
    // `work` (statuses of items no switch moves) now, or once the queued
    // switches are done: they come first, and their items are told nothing.
    void after_switches(std::function<void()> work);
    void run_after_switches();
    void move_subscribers(CachedItem& from, CachedItem& to, const proto::FieldImage* image);
    // Followers of a hot standby (server/redundancy/follow_standby.cpp).
    SwitchQueue::Outcome follow_standby(CachedItem& from, CachedItem& to);
    void feed_update(CachedItem& to, std::span<const uint8_t> whole);
    void refresh_follower(CachedItem& follower, CachedItem& to);
    void feed_status(CachedItem& to);
    void feed_statuses(const std::vector<CachedItem*>& items);
    bool own_image_while_following(CachedItem& item);
    void hand_followers_over(const std::vector<CachedItem*>& items);
    void adopt_subscribers(CachedItem& item, const proto::FieldImage* image);
    CachedItem* serving_item(const std::string& service, const std::string& name);
    void rewarm_standby(uint16_t source);
    // What operators see of them (server/redundancy/redundancy_report.cpp).
    void register_redundancy_metrics();
    std::string redundancy_json() const;

    // Access control (server/server_access.cpp).
    static wire::Status not_entitled_status();
    void refuse_not_entitled(ClientSession& client, const std::string& service,
                             const std::string& name, uint64_t item_id);
    void enforce_access();
    size_t revoke_subscriptions(ClientSession& client);
    // Per-user limits: true (closed limit_reached, counted) when the user of this
    // accepted login already holds clients.max_connections_per_user connections.
    bool refuse_over_user_connections(ClientSession& client);
    // The subscriptions the client's user may still open (SIZE_MAX: no limit).
    size_t user_subscription_room(const ClientSession& client) const;
    void refuse_over_user_subscriptions(ClientSession& client, const std::string& service,
                                        const std::string& name);

    // The WebSocket/JSON listener (server/websocket/server_websocket.cpp).
    void start_websocket();
    void register_websocket_metrics();

    void on_housekeeping();
    void check_client_timeouts(int64_t now);
    void on_stopped(const std::string& why, size_t cut_off);

    // Metrics, /stats and health (server/server_metrics.cpp).
    void register_metrics();
    void register_post_metrics(MetricsRegistry& metrics);  // server_posts.cpp
    std::pair<bool, std::string> health() const;
    std::string stats_json() const;

    // Operators' view and actions on the admin endpoint (server/server_admin.cpp).
    AdminHttp::Handlers admin_handlers();
    std::string info_json() const;
    AdminHttp::Reply items_reply(const AdminHttp::Query& query);
    const proto::FieldDictionary* field_names();
    std::string fields_json(const CachedItem& item);
    AdminHttp::Reply admin_action(const std::string& action, const AdminHttp::Query& query);
    AdminHttp::Reply kick(const AdminHttp::Query& query);
    AdminHttp::Reply start_drain(const AdminHttp::Query& query);
    void on_drain_tick();
    void log_counters(spdlog::level::level_enum level);

    EventLoop& loop_;
    const ServerConfig& config_;  // the running configuration (see the constructor)
    std::string server_id_;
    std::shared_ptr<spdlog::logger> log_;
    auth::Authenticator auth_;  // logins and entitlements
    FlushScheduler flusher_;
    HopProbe hop_probe_;  // stamp to receive and to send, for mdcast-bench
    SpinPoll spinner_;    // backbone.busy_poll_us
    OutputPool output_pool_;
    ItemCache cache_;
    Fanout fanout_;  // before clients_: a closing client asks it for its count
    ImageRecovery recovery_;
    InterestReporter interest_;           // interactive items held and released, told upstream
    PostRouter posts_;                    // clients' posts on their way upstream and back
    std::unique_ptr<Upstream> upstream_;  // the multicast backbone, or parents over TCP
    DaemonListeners listeners_;
    // WebSocket/JSON clients (clients.ws_port): their own port, the same sessions.
    std::unique_ptr<JsonEncoder> json_;
    std::unique_ptr<JsonDictionary> json_dictionary_;  // the Dictionary domain, from json_'s
    std::string ws_page_;
    WsCounters ws_counters_;
    WsSettings ws_settings_;
    std::unique_ptr<DaemonListeners> ws_listeners_;
    // /items names fields with clients.ws_dictionary_file, read on first use when the
    // WebSocket port (which has it already) is off.
    std::optional<proto::FieldDictionary> field_names_;
    bool field_names_read_ = false;
    PeerTable<ClientSession> clients_;
    Timer housekeeping_;
    Timer drain_timer_;
    // Lame duck (POST /drain): no new clients; the open ones are closed with
    // `shutdown` a few at a time so they fail over gradually, then the server stops.
    struct Drain {
        bool active = false;
        int64_t start_ns = 0;
        int64_t duration_ns = 0;
        size_t initial = 0;  // clients open when it began
        std::unordered_set<uint64_t> moved;
    } drain_;
    ServerCounters counters_;
    ServiceGroups groups_;  // redundancy groups: the active distributor of each service
    MemberLag member_lag_;  // how current each group member's updates are
    struct SwitchCounters {
        uint64_t items_switched = 0;       // subscribed items moved to another member's item
        uint64_t items_without_image = 0;  // subscribed items the new member had no image of
        uint64_t items_unchanged = 0;      // of the switched, those sent nothing (same values)
        int64_t last_done_unix_ns = 0;     // when the last switch had moved its last item
    } switch_counters_;
    SwitchQueue switches_;  // subscribed items not yet moved by a switch, in slices
    Timer switch_timer_;    // the next slice, after the clients' I/O
    std::vector<std::function<void()>> after_switches_;  // waiting for switches_ to be done
    // During one subscribe request: the user's room and the client's count at its start.
    struct UserBudget {
        size_t room = SIZE_MAX;
        size_t client_start = 0;
    } user_budget_;
    log::RateLimiter user_limit_log_;
    MetricsRegistry metrics_{"mdcast_server_"};
    std::unique_ptr<AdminHttp> admin_;
    struct ClosedClient {
        uint64_t id;
        std::string peer, user, reason, text;
        int64_t at_ns;
    };
    std::deque<ClosedClient> recent_closes_;  // the last kRecentCloses, for /stats
    int64_t last_counter_log_ns_ = 0;
    int64_t last_rate_sample_ns_ = 0;
    proto::UpdateView update_;  // reused on the hot path to avoid an allocation per message
    std::string rekeyed_;       // a standby's update rewritten for its follower (reused)
};

}  // namespace mdcast::server
