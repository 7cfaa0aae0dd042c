// The distributor process: owns the event loop's parts and is the go-between
// of its rooms, which talk to each other only through it:
//  - the publisher listener and sessions (distributor/publisher_session.h),
//    logins, idle and login timeouts, back-pressure, shutdown;
//  - the item registry and image cache (distributor/item_registry.h);
//  - the image service (distributor/image_service.h): servers' image requests;
//  - the interest leases (distributor/interest_leases.h): interactive items;
//  - the backbone out (distributor/backbone_out.h), reached only through its
//    interface (the multicast backbone is today's implementation);
//  - metrics, /stats and the admin endpoint (distributor_admin.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/auth/authenticator.h"
#include "common/daemon/admin_http.h"
#include "common/daemon/daemon_listeners.h"
#include "common/daemon/peer_table.h"
#include "common/metrics.h"
#include "common/net/event_loop.h"
#include "common/net/flush_scheduler.h"
#include "common/net/hop_probe.h"
#include "common/net/spin_poll.h"
#include "distributor/backbone_out.h"
#include "distributor/distributor_config.h"
#include "distributor/image_service.h"
#include "distributor/interest_leases.h"
#include "distributor/item_registry.h"
#include "distributor/post_relay.h"
#include "distributor/publisher_group.h"
#include "distributor/publisher_session.h"
#include "distributor/retired_images.h"

namespace mdcast::distributor {

class Distributor final : public PublisherSession::Owner,
                          public BackboneOut::Handler,
                          public ImageService::Link,
                          public InterestLeases::Link,
                          private PostRelay::Link {
  public:
    // Binds every socket; throws std::runtime_error naming what failed. `config` is
    // the running configuration, kept by reference: it outlives the daemon, and a
    // SIGHUP copies the keys that reload into it (daemon_main's reload_daemon).
    Distributor(EventLoop& loop, const DistributorConfig& config);
    ~Distributor();

    // Stops accepting, tells publishers (their SDK fails over at once), and stops
    // the loop once they are flushed or shutdown.grace_ms passed; a second call
    // stops at once.
    void shutdown(const std::string& why);
    // SIGHUP: re-reads the users and certificate files; of `changes` (the changed
    // keys whose schema rows reload) says which failed to load or need a restart.
    config::ReloadResult reload(const DistributorConfig& fresh,
                                const std::vector<config::ConfigChange>& changes);

    uint16_t publisher_port() const { return listeners_.port(); }
    uint16_t publisher_tls_port() const { return listeners_.tls_port(); }
    uint64_t epoch() const { return backbone_->epoch(); }

    // ---- PublisherSession::Owner ----
    void on_login_request(PublisherSession& session, const wire::LoginRequest& request) override;
    void on_directory_changed() override;
    void on_publisher_closed(PublisherSession& session, CloseReason reason,
                             const std::string& text) override;
    void on_service_announced(PublisherSession& session, const ServiceEntry& service) override;
    TakeoverVerdict replace_earlier_connection(PublisherSession& claimant,
                                               const ServiceEntry& service,
                                               std::string_view presented_token) override;
    TakeoverVerdict join_as_standby(PublisherSession& claimant, const ServiceEntry& service,
                                    std::string_view presented_token) override;
    GroupMember* standby_of(uint32_t service_id, uint64_t session) override;
    void on_publisher_input() override { spinner_.on_work(); }
    void on_post_ack(PublisherSession& session, const wire::PostAck& ack) override;
    void on_update_forwarded(uint64_t publish_time_ns) override {
        if (hop_probe_.note_received(publish_time_ns)) backbone_->flush_after(hop_probe_);
    }

    // ---- BackboneOut::Handler ----
    std::optional<wire::ItemStatus> on_image_request(const wire::ImageRequest& request,
                                                     ServerId from) override;
    void on_directory_query() override { on_directory_changed(); }
    void on_interest(const wire::Interest& interest, ServerId from) override;
    // A server's post: to the publisher of its service (distributor_posts.cpp).
    void on_post(const wire::Post& post, ServerId from) override;
    void on_congestion(bool congested) override;

    // ---- ImageService::Link ----
    void on_image_served(const ItemEntry& item, ServerId server) override;
    SourceAsk ask_source(const ServiceEntry& service, ItemEntry* item, const std::string& name,
                         ServerId server) override;

    // ---- InterestLeases::Link ----
    bool source_connected(const ServiceEntry& service) override;
    void request_from_source(const ServiceEntry& service, const ItemEntry& item) override;
    bool unsubscribe_at_source(uint64_t session, const std::vector<uint64_t>& item_ids) override;

  private:
    // ---- PostRelay::Link (distributor_posts.cpp) ----
    bool send_to_publisher(uint64_t session, const wire::Post& post) override;
    void answer_server(ServerId server, const wire::PostAck& ack) override {
        backbone_->answer_post(server, ack);
    }
    void register_post_metrics();

    void on_accept(int fd, std::string peer, bool tls);
    void refuse_takeover(const PublisherSession& claimant, const ServiceEntry& service,
                         TakeoverVerdict verdict);
    using ClaimJudge = TakeoverVerdict (*)(const TakeoverClaim&);
    TakeoverVerdict judge_claim(PublisherSession& claimant, const ServiceEntry& service,
                                std::string_view presented_token, ClaimJudge judge,
                                PublisherSession*& owner);
    std::string_view proof_name(std::string_view presented_token) const;
    PublisherSession* open_session(uint64_t id);
    void check_timeouts(int64_t now);
    void on_housekeeping();
    void on_stopped(const std::string& why, size_t cut_off);
    // ---- standby publishers (distributor_groups.cpp) ----
    void hand_place_to(PublisherSession& claimant, ServiceEntry& service);
    void leave_groups(uint64_t session, const std::string& why);
    void check_preferred(int64_t now);
    void switch_group(PublisherGroup& group, uint64_t to, GroupSwitchReason reason,
                      const std::string& from_label, const std::string& why);
    void register_group_metrics();
    std::string groups_json() const;
    // distributor_admin.cpp: the distributor's own counters, /stats, /info, actions.
    void log_counters(spdlog::level::level_enum level);
    void register_metrics();
    std::string stats_json() const;
    AdminHttp::Handlers admin_handlers();

    EventLoop& loop_;
    const DistributorConfig& config_;  // the running configuration (see the constructor)
    std::shared_ptr<spdlog::logger> log_;
    auth::Authenticator auth_;     // publisher logins
    std::string takeover_secret_;  // publishers.takeover_secret_file's (empty: none)
    FlushScheduler publisher_flusher_;
    ItemRegistry registry_;
    std::unique_ptr<BackboneOut> backbone_;
    InterestLeases leases_;  // interactive services: what servers asked sources for
    ImageService images_;
    PostRelay::Settings post_settings_;
    PostRelay posts_;  // servers' posts awaiting their publisher's answer
    DaemonListeners listeners_;
    PeerTable<PublisherSession> sessions_;
    Timer housekeeping_;
    RetiredImages retired_images_;  // a switch's or a leaver's standby images, freed later
    SpinPoll spinner_;              // distributor.busy_poll_us
    HopProbe hop_probe_;            // stamp to receive and to send, for mdcast-bench
    PublisherCounters publisher_counters_;
    std::map<uint32_t, PublisherGroup> groups_;  // by service id: services with standbys
    std::array<uint64_t, 2> switch_totals_{};    // by GroupSwitchReason
    uint64_t items_refreshed_ = 0;
    uint64_t items_equal_ = 0;
    uint64_t items_missing_ = 0;
    MetricsRegistry metrics_{"mdcast_distributor_"};
    std::unique_ptr<AdminHttp> admin_;
    int64_t started_ns_;
};

}  // namespace mdcast::distributor
