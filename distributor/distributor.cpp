#include "distributor/distributor.h"

#include "common/clock.h"
#include "common/daemon/config_checks.h"
#include "common/daemon/daemon_keys.h"
#include "common/daemon/daemon_main.h"
#include "common/logging.h"
#include "proto/source_ids.h"

namespace mdcast::distributor {

namespace {

// Epochs are ordered: the low 48 bits are the start time in milliseconds
// (CLOCK_REALTIME), so a later start has a larger epoch and servers can refuse
// an older one (a replayed packet from before a restart, docs/hardening.md).
uint64_t new_epoch(uint16_t source) {
    return proto::make_epoch(source, static_cast<uint64_t>(realtime_ns() / 1'000'000));
}

InterestTracker::Settings interest_settings(const DistributorConfig& config) {
    InterestTracker::Settings settings;
    settings.lease_ns = int64_t{config.interest_lease_ms} * 1'000'000;
    settings.hold_ns = int64_t{config.release_hold_ms} * 1'000'000;
    settings.max_awaiting_per_service = config.max_awaiting_per_service;
    settings.max_awaiting_items = config.max_awaiting_items;
    return settings;
}

// The preflight reported what cannot be resolved before the daemon got here.
TradeFields trade_fields(const DistributorConfig& config) {
    config::Problems ignored;
    return resolve_trade_fields(config, ignored);
}

ListenerSettings listener_settings(const DistributorConfig& config) {
    return {"publishers",
            config.publishers_address,
            config.publishers_plaintext,
            config.publishers_port,
            config.publishers_tls,
            config.publishers_tls_port,
            128,
            tls_server_settings(config),
            config.tls_handshake_timeout_ms};
}

}  // namespace

Distributor::Distributor(EventLoop& loop, const DistributorConfig& config)
    : loop_(loop),
      config_(config),
      log_(log::get("distributor")),
      auth_(loop, auth_settings(config), "publisher"),
      takeover_secret_(config.publishers_takeover_secret_file.empty()
                           ? ""
                           : load_takeover_secret(config.publishers_takeover_secret_file)),
      publisher_flusher_(loop, std::chrono::microseconds(0)),
      registry_(config.distributor_id, config.max_services, config.max_items, trade_fields(config),
                config.max_book_entries),
      backbone_(make_backbone_out(loop, config, new_epoch(config.distributor_id), *this)),
      leases_(interest_settings(config), registry_, *backbone_, *this),
      images_(registry_, *backbone_, *this),
      post_settings_{config.publishers_post_timeout_ms, config.publishers_max_outstanding_posts},
      posts_(*this, post_settings_),
      listeners_(
          loop, listener_settings(config),
          [this](int fd, std::string peer, bool tls) { on_accept(fd, std::move(peer), tls); }),
      sessions_(loop, "publisher", "distributor shutting down",
                {nullptr, [this](const std::string& why, size_t cut) { on_stopped(why, cut); }}),
      housekeeping_(loop, [this] { on_housekeeping(); }),
      retired_images_(loop),
      spinner_(loop, std::chrono::microseconds(config.busy_poll_us)),
      started_ns_(monotonic_ns()) {
    config::raise_descriptor_limit(config.publishers_max_connections);
    housekeeping_.start_periodic(std::chrono::seconds(1));
    register_metrics();
    if (config.admin_enabled) {
        admin_ = std::make_unique<AdminHttp>(
            loop, config.admin_address, config.admin_port, metrics_, admin_handlers(),
            config.admin_token_file.empty() ? "" : AdminHttp::load_token(config.admin_token_file),
            admin_limits(config, !config.auth.users_file.empty()));
        admin_->register_metrics(metrics_);
        log_->info("admin http on {}:{} (/metrics /healthz /stats /info{})", config.admin_address,
                   admin_->port(), config.admin_token_file.empty() ? "" : "; POST /reload");
    }
    log_->info("distributor {}: publishers {}; {}; epoch {:016x}", config.distributor_id,
               listeners_.describe(), backbone_->describe(), backbone_->epoch());
}

Distributor::~Distributor() = default;

void Distributor::on_accept(int fd, std::string peer, bool tls) {
    const uint64_t id = sessions_.next_id();
    TcpConnection::Limits limits;
    // Small frames until the login is accepted (publishers.max_login_frame_bytes).
    limits.max_frame_body_bytes =
        std::min(config_.publishers_max_login_frame_bytes, config_.publishers_max_frame_bytes);
    limits.max_output_bytes = config_.publishers_max_output_bytes;
    if (tls) limits.tls = listeners_.tls_limits();
    // Publishers ping three times per idle timeout, so a quiet one is not closed.
    auto session = std::make_unique<PublisherSession>(
        *this, registry_, *backbone_, publisher_counters_, config_.publishers_idle_timeout_ms / 3);
    auto connection =
        std::make_unique<TcpConnection>(loop_, publisher_flusher_, fd, id, peer,
                                        proto::kPublisherToDistributorTypes, limits, *session);
    PublisherSession* raw = session.get();
    if (!sessions_.admit(std::move(session), std::move(connection),
                         config_.publishers_max_connections, "publishers.max_connections")) {
        return;
    }
    if (backbone_->congested()) raw->connection().pause_reading();
    log_->info("publisher connection {} from {}{}", id, peer, tls ? " (TLS)" : "");
}

void Distributor::on_publisher_closed(PublisherSession& session, CloseReason reason,
                                      const std::string& text) {
    const uint64_t id = session.connection().id();
    if (is_tls_handshake_failure(reason)) {
        listeners_.log_handshake_failure(id, session.connection().peer(), reason, text);
    }
    posts_.publisher_gone(id);
    leave_groups(id, std::string(close_reason_name(reason)) + ": " + text);
    const auto released = registry_.release(id);
    // The directory first, sent now rather than at the end of this loop pass:
    // servers switch a redundancy group on it, and marking a service's items
    // (100,000 of them: milliseconds) can wait.
    if (!released.empty()) {
        on_directory_changed();
        backbone_->flush();
    }
    for (uint32_t service_id : released) {
        registry_.mark_service_items_suspect(service_id);
        log_->warn("service {} is down: its publisher went away",
                   log::escaped(registry_.service(service_id)->name));
    }
    sessions_.on_closed(session, reason);  // destroyed later, never inside its own callback
}

void Distributor::on_directory_changed() {
    backbone_->send(proto::FrameType::kDirectory, registry_.directory());
}

// Back-pressure: while the backbone backlog is full, publishers are not read,
// so their TCP windows close instead of the distributor's memory growing.
void Distributor::on_congestion(bool congested) {
    for (auto& [id, session] : sessions_) {
        TcpConnection& connection = session->connection();
        if (!connection.is_open()) continue;
        if (congested) {
            connection.pause_reading();
        } else {
            connection.resume_reading();
        }
    }
}

// ---- servers' requests, handed to the rooms ----

std::optional<wire::ItemStatus> Distributor::on_image_request(const wire::ImageRequest& request,
                                                              ServerId from) {
    return images_.on_image_request(request, from);
}

void Distributor::on_interest(const wire::Interest& interest, ServerId from) {
    leases_.on_interest(interest, from, monotonic_ns());
}

void Distributor::on_image_served(const ItemEntry& item, ServerId server) {
    leases_.on_image_served(item, server, monotonic_ns());
}

SourceAsk Distributor::ask_source(const ServiceEntry& service, ItemEntry* item,
                                  const std::string& name, ServerId server) {
    return leases_.ask_source(service, item, name, server, monotonic_ns());
}

// A source (re)announced a service: interest leases ask it again for what is wanted.
void Distributor::on_service_announced(PublisherSession&, const ServiceEntry& service) {
    leases_.on_service_announced(service, monotonic_ns());
}

// ---- sources, as the rooms reach them ----

// The publisher connection `id` while it is open; nullptr when gone or closed.
PublisherSession* Distributor::open_session(uint64_t id) {
    PublisherSession* session = sessions_.find(id);
    return session && session->connection().is_open() ? session : nullptr;
}

bool Distributor::source_connected(const ServiceEntry& service) {
    return open_session(service.owner_session) != nullptr;
}

void Distributor::request_from_source(const ServiceEntry& service, const ItemEntry& item) {
    if (PublisherSession* owner = open_session(service.owner_session)) {
        owner->request_item(service, item);
    }
}

bool Distributor::unsubscribe_at_source(uint64_t session, const std::vector<uint64_t>& item_ids) {
    PublisherSession* owner = open_session(session);
    if (owner) owner->unsubscribe_items(item_ids);
    return owner != nullptr;
}

// ---- housekeeping, once a second ----

void Distributor::on_housekeeping() {
    const int64_t now = monotonic_ns();
    leases_.tick(now);
    check_preferred(now);
    posts_.expire(now);
    if (registry_.take_counts_changed()) on_directory_changed();  // item_count is right
    check_timeouts(now);
    if ((now - started_ns_) / 1'000'000'000 % 10 == 0) log_counters(spdlog::level::debug);
}

// Publishers that never logged in, or fell silent (publishers ping three times
// per idle timeout, so a quiet one is never closed).
void Distributor::check_timeouts(int64_t now) {
    for (auto& [id, session] : sessions_) {
        TcpConnection& connection = session->connection();
        if (!connection.is_open()) continue;
        const int64_t silent_ms = (now - connection.last_input_ns()) / 1'000'000;
        const int64_t open_ms = (now - connection.ready_ns()) / 1'000'000;
        if (connection.tls_handshaking()) continue;  // its own deadline: tls.handshake_timeout_ms
        if (!session->logged_in() && open_ms >= config_.publishers_login_timeout_ms) {
            connection.close(CloseReason::kNotLoggedIn,
                             "no login within publishers.login_timeout_ms of connecting");
        } else if (connection.frame_overdue(now, config_.publishers_frame_timeout_ms)) {
            connection.close(CloseReason::kFrameTimeout,
                             "a frame not finished within publishers.frame_timeout_ms of its first "
                             "byte");
        } else if (config_.publishers_idle_timeout_ms > 0 &&
                   silent_ms >= config_.publishers_idle_timeout_ms) {
            connection.close(CloseReason::kIdleTimeout,
                             "silent for " + std::to_string(silent_ms) + " ms");
        }
    }
}

static PublisherIdentity identity(const PublisherSession& session) {
    return {session.user(), session.application_id(), session.position()};
}

std::string_view Distributor::proof_name(std::string_view presented_token) const {
    if (!takeover_secret_.empty() && same_secret(takeover_secret_, presented_token)) {
        return "the operator's takeover secret";
    }
    return auth_.enabled() ? "its login" : "its takeover token";
}

// `claimant`'s claim on `service` judged by `judge` against its owner (set
// when there is one, open and logged in); a refusal is logged.
TakeoverVerdict Distributor::judge_claim(PublisherSession& claimant, const ServiceEntry& service,
                                         std::string_view presented_token, ClaimJudge judge,
                                         PublisherSession*& owner) {
    owner = sessions_.find(service.owner_session);
    if (!owner || owner == &claimant || !owner->logged_in()) {
        return TakeoverVerdict::kOtherPublisher;
    }
    const auto verdict = judge({.owner = identity(*owner),
                                .claimant = identity(claimant),
                                .owner_token = service.takeover_token,
                                .presented_token = presented_token,
                                .authenticated = auth_.enabled(),
                                .shared_secret = takeover_secret_});
    if (verdict != TakeoverVerdict::kAllowed) refuse_takeover(claimant, service, verdict);
    return verdict;
}

TakeoverVerdict Distributor::replace_earlier_connection(PublisherSession& claimant,
                                                        const ServiceEntry& service,
                                                        std::string_view presented_token) {
    PublisherSession* owner = nullptr;
    const auto verdict = judge_claim(claimant, service, presented_token, judge_takeover, owner);
    if (verdict != TakeoverVerdict::kAllowed) return verdict;
    ++publisher_counters_.takeovers;
    hand_place_to(claimant, *registry_.service(service.id));
    log_->warn(
        "publisher connection {} ({}) replaces connection {} of the same publisher "
        "(user {}, application {}, position {}; proven by {}): the earlier one is closed",
        claimant.connection().id(), claimant.connection().peer(), service.owner_session,
        log::escaped(claimant.user()), log::escaped(claimant.application_id()),
        log::escaped(claimant.position()), proof_name(presented_token));
    owner->connection().close(CloseReason::kKicked,
                              "replaced by a newer connection of the same publisher");
    return verdict;
}

// Logged at the 1st, 2nd, 4th, 8th ... refusal: a stranger hammering a service
// is seen at once, and cannot flood the log.
void Distributor::refuse_takeover(const PublisherSession& claimant, const ServiceEntry& service,
                                  TakeoverVerdict verdict) {
    const uint64_t refused = ++publisher_counters_.takeovers_refused;
    if ((refused & (refused - 1)) != 0) return;
    log_->warn(
        "publisher connection {} ({}, user {}, application {}, position {}) refused service "
        "'{}', owned by connection {}: {} [{} refused so far]",
        claimant.connection().id(), claimant.connection().peer(), log::escaped(claimant.user()),
        log::escaped(claimant.application_id()), log::escaped(claimant.position()),
        log::escaped(service.name), service.owner_session, takeover_refusal_text(verdict), refused);
}

config::ReloadResult Distributor::reload(const DistributorConfig& fresh,
                                         const std::vector<config::ConfigChange>& changes) {
    config::ReloadResult result;
    result.restart = auth_keys_needing_restart(config_, fresh, changes);
    // The users file is re-read on every SIGHUP. A publisher whose user is gone
    // is closed; a changed password does not log anyone out.
    if (auth_.reload(auth_settings(fresh))) {
        for (auto& [id, session] : sessions_) {
            if (session->logged_in() && session->connection().is_open() &&
                !auth_.find(session->user())) {
                session->connection().close(CloseReason::kAuthFailed,
                                            "user removed from the users file");
            }
        }
    }
    // Certificate files are re-read on every SIGHUP, changed names or not.
    if (!listeners_.reload_tls(tls_server_settings(fresh), fresh.tls_handshake_timeout_ms))
        result.failed = config::changed_under(changes, "tls");
    return result;
}

void Distributor::on_login_request(PublisherSession& session, const wire::LoginRequest& request) {
    const uint64_t id = session.connection().id();
    auth_.check(session.connection().peer(), request.user(), request.password(),
                [this, id](const auth::LoginVerdict& verdict) {
                    PublisherSession* asker = sessions_.find(id);
                    // Gone or closing while its password was checked: nobody to answer.
                    if (!asker || !asker->connection().is_open() || asker->connection().closing()) {
                        return;
                    }
                    if (verdict.accepted()) {
                        // The small pre-login frame limit ends.
                        asker->connection().set_max_frame_body(config_.publishers_max_frame_bytes);
                        return asker->accept_login();
                    }
                    asker->refuse_login(verdict);
                });
}

void Distributor::shutdown(const std::string& why) {
    if (!sessions_.shutting_down()) {
        listeners_.disable();
        log_->info("shutting down on {}: telling {} publisher(s), up to {} ms to flush", why,
                   sessions_.size(), config_.shutdown_grace_ms);
    }
    sessions_.begin_shutdown(why, std::chrono::milliseconds(config_.shutdown_grace_ms));
}

// The backbone gets everything queued, the cut-off publishers' services' status included.
void Distributor::on_stopped(const std::string& why, size_t cut) {
    backbone_->flush();
    log_->info("shutdown complete ({}); {} publisher(s) cut off with output unsent", why, cut);
    log_counters(spdlog::level::info);
    loop_.stop();
}

}  // namespace mdcast::distributor
