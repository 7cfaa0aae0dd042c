// The distributor process: owns the event loop, the publisher listener and
// sessions, the item registry and the backbone (multicast out, control in).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common/auth/authenticator.h"
#include "common/daemon/admin_http.h"
#include "common/daemon/daemon_listeners.h"
#include "common/daemon/peer_table.h"
#include "common/metrics.h"
#include "common/net/event_loop.h"
#include "common/net/flush_scheduler.h"
#include "distributor/backbone_sender.h"
#include "distributor/control_receiver.h"
#include "distributor/distributor_config.h"
#include "distributor/idle_spinner.h"
#include "distributor/interest_tracker.h"
#include "distributor/item_registry.h"
#include "distributor/publisher_session.h"
#include "proto/packet_signer.h"

namespace mdcast::distributor {

class Distributor final : public PublisherSession::Owner, public ControlReceiver::Handler {
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
    uint64_t epoch() const { return backbone_.epoch(); }

    void on_login_request(PublisherSession& session, const wire::LoginRequest& request) override;
    void on_directory_changed() override;
    void on_publisher_closed(PublisherSession& session, CloseReason reason,
                             const std::string& text) override;
    void on_service_announced(PublisherSession& session, const ServiceEntry& service) override;
    bool replace_earlier_connection(PublisherSession& claimant, uint64_t owner_session) override;
    void on_publisher_input() override { spinner_.on_work(); }
    void on_image_request(const wire::ImageRequest& request, const sockaddr_in& from) override;
    void on_directory_query() override;
    void on_nak(const wire::Nak& nak, const sockaddr_in& from) override;
    void on_interest(const wire::Interest& interest, const sockaddr_in& from) override;

  private:
    void on_accept(int fd, std::string peer, bool tls);
    ItemEntry* ask_source(const ServiceEntry& service, ItemEntry* item, const std::string& name,
                          uint64_t server);
    void renew_interest(uint64_t item_id, uint64_t server, int64_t now);
    void drop_unwanted(int64_t now);
    void on_backbone_congestion(bool congested);
    void on_housekeeping();
    void on_stopped(const std::string& why, size_t cut_off);
    void log_counters(spdlog::level::level_enum level);
    void register_metrics();
    std::string stats_json() const;
    AdminHttp::Handlers admin_handlers();

    EventLoop& loop_;
    const DistributorConfig& config_;  // the running configuration (see the constructor)
    std::shared_ptr<spdlog::logger> log_;
    auth::Authenticator auth_;  // publisher logins
    FlushScheduler publisher_flusher_;
    std::unique_ptr<PacketSigner> signer_;  // before control_ and backbone_, which use it
    ItemRegistry registry_;
    InterestTracker interest_;  // interactive services: what servers asked sources for
    ControlReceiver control_;
    BackboneSender backbone_;
    DaemonListeners listeners_;
    PeerTable<PublisherSession> sessions_;
    Timer housekeeping_;
    IdleSpinner spinner_;  // distributor.busy_poll_us
    PublisherCounters publisher_counters_;
    uint64_t unsubscribes_sent_ = 0;     // items the distributor told their source to stop
    uint64_t interest_other_epoch_ = 0;  // Interest messages for another epoch: ignored
    MetricsRegistry metrics_{"mdcast_distributor_"};
    std::unique_ptr<AdminHttp> admin_;
    int64_t started_ns_;
};

}  // namespace mdcast::distributor
