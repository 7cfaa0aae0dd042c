#include "server/server.h"

#include <unistd.h>

#include <algorithm>

#include "common/auth/auth_keys.h"
#include "common/clock.h"
#include "common/daemon/config_checks.h"
#include "common/daemon/daemon_keys.h"
#include "proto/source_ids.h"
#include "server/backbone/backbone_upstream.h"
#include "server/cascade/cascade_upstream.h"
#include "server/make_status.h"
#include "server/request_checks.h"

namespace mdcast::server {

using proto::FrameType;

namespace {

std::string make_server_id(uint32_t instance) {
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    return "mdcast-server/" + std::string(host) + "/" + std::to_string(instance);
}

ListenerSettings listener_settings(const ServerConfig& config) {
    return {"clients",
            config.clients_address,
            config.clients_plaintext,
            config.instance_client_port(),
            config.clients_tls,
            config.instance_tls_port(),
            1024,
            tls_server_settings(config),
            config.tls_handshake_timeout_ms};
}

std::unique_ptr<Upstream> make_upstream(EventLoop& loop, const ServerConfig& config,
                                        Upstream::Handler& handler) {
    if (config.upstream_kind == "tcp") return make_tcp_upstream(loop, config, handler);
    return make_backbone_upstream(loop, config, handler);
}

std::chrono::microseconds flush_interval(const ServerConfig& config) {
    return config.output_timed_writes ? std::chrono::milliseconds(config.output_flush_interval_ms)
                                      : std::chrono::microseconds(0);
}

}  // namespace

wire::Status Server::not_entitled_status() {
    return make_status(wire::STREAM_CLOSED, wire::DATA_SUSPECT, wire::STATUS_NOT_ENTITLED,
                       "not entitled");
}

Server::Server(EventLoop& loop, const ServerConfig& config)
    : loop_(loop),
      config_(config),
      server_id_(make_server_id(config.instance)),
      log_(log::get("server")),
      auth_(loop, auth_settings(config), "client"),
      flusher_(loop, flush_interval(config)),
      spinner_(loop, std::chrono::microseconds(config.backbone_busy_poll_us)),
      output_pool_(config.output_pool_bytes, config.output_guaranteed_bytes,
                   config.output_max_bytes),
      cache_(config.cache_hash_table_size, config.cache_max_items, config.cache_enable_cache,
             config.cache_max_book_entries),
      fanout_(cache_, loop),
      recovery_(cache_,
                {config.cache_max_pending_requests,
                 int64_t{config.backbone_image_request_timeout_ms} * 1'000'000,
                 config.cache_max_pending_requests_per_client,
                 config.cache_max_pending_requests_per_service},
                *this),
      interest_(*this),
      posts_(*this, config),
      upstream_(make_upstream(loop, config, *this)),
      listeners_(loop, listener_settings(config),
                 [this](int fd, std::string peer, bool tls) {
                     on_accept(fd, std::move(peer), tls, false);
                 }),
      clients_(loop, "client", "server shutting down",
               {[this](ClientSession& client) {
                    release_items_of(client);  // drops its subscriptions
                    recovery_.remove_client(&client);
                },
                [this](const std::string& why, size_t cut) { on_stopped(why, cut); }}),
      housekeeping_(loop, [this] { on_housekeeping(); }),
      drain_timer_(loop, [this] { on_drain_tick(); }),
      switch_timer_(loop, [this] { run_switch_slice(); }) {
    config::raise_descriptor_limit(config.clients_max_connections);
    start_websocket();
    housekeeping_.start_periodic(std::chrono::milliseconds(100));
    register_metrics();
    if (config.admin_enabled) {
        admin_ = std::make_unique<AdminHttp>(
            loop, config.admin_address, config.instance_admin_port(), metrics_, admin_handlers(),
            config.admin_token_file.empty() ? "" : AdminHttp::load_token(config.admin_token_file),
            admin_limits(config, !config.auth.users_file.empty()));
        admin_->register_metrics(metrics_);
        log_->info("admin http on {}:{} (/metrics /healthz /stats /info /items{})",
                   config.admin_address, admin_->port(),
                   config.admin_token_file.empty() ? "" : "; POST /kick /drain /reload");
    }
    log_->info("{}: clients {}{}; {} writes{}", server_id_, listeners_.describe(),
               ws_listeners_ ? "; WebSocket/JSON " + ws_listeners_->describe() : "",
               config.output_timed_writes ? "timed" : "natural-batching",
               config.output_timed_writes
                   ? " every " + std::to_string(config.output_flush_interval_ms) + " ms"
                   : "");
}

Server::~Server() = default;

// ---- clients -------------------------------------------------------------------------------

void Server::on_accept(int fd, std::string peer, bool tls, bool websocket) {
    const uint64_t id = clients_.next_id();
    TcpConnection::Limits limits;
    // Until its login is accepted a client may send only small frames
    // (clients.max_login_frame_bytes): an idle slot costs a small buffer.
    limits.max_frame_body_bytes =
        std::min(config_.clients_max_login_frame_bytes, config_.clients_max_frame_bytes);
    limits.max_output_bytes = config_.output_max_bytes;
    // Clients send small requests: a small read buffer keeps an idle connection
    // cheap (it grows for a larger frame, up to clients.max_frame_bytes).
    limits.read_chunk_bytes = 4096;
    limits.pool = &output_pool_;
    limits.tcp_nodelay = config_.output_tcp_nodelay;
    limits.send_buffer_bytes = static_cast<int>(config_.output_tcp_send_buffer_bytes);
    limits.raw_input = websocket;  // wslay frames the input (WsSession)
    if (tls) limits.tls = websocket ? ws_listeners_->tls_limits() : listeners_.tls_limits();
    const ClientLimits client_limits{
        config_.output_slow_consumer_policy == "conflate",
        config_.clients_max_items_per_request,
        config_.clients_max_subscriptions,
        config_.clients_heartbeat_interval_ms,
        config_.clients_max_frame_bytes,
        config_.output_max_held_trades,
        config_.output_link_slow_consumer_policy == "conflate" && config_.cache_enable_cache,
        config_.output_link_max_held_trades,
        config_.output_link_max_bytes,
        config_.output_link_max_delay_ms,
        config_.output_link_unsent_bytes};
    auto client = std::make_unique<ClientSession>(*this, client_limits, server_id_);
    auto connection = std::make_unique<TcpConnection>(loop_, flusher_, fd, id, peer,
                                                      proto::kClientToServerTypes, limits, *client);
    if (!clients_.admit(std::move(client), std::move(connection), config_.clients_max_connections,
                        "clients.max_connections", websocket ? &ws_settings_ : nullptr)) {
        return;
    }
    log_->debug("client {} connected from {}{}{}", id, peer, websocket ? " (WebSocket)" : "",
                tls ? " (TLS)" : "");
}

void Server::on_client_closed(ClientSession& client, CloseReason reason, const std::string& text) {
    constexpr size_t kRecentCloses = 50;
    const TcpConnection& c = client.connection();
    recent_closes_.push_back(ClosedClient{c.id(), c.peer(), client.user(),
                                          std::string(close_reason_name(reason)), text,
                                          realtime_ns()});
    if (recent_closes_.size() > kRecentCloses) recent_closes_.pop_front();
    if (reason == CloseReason::kSlowConsumer) ++counters_.slow_consumers;
    if (is_tls_handshake_failure(reason))
        listeners_.log_handshake_failure(c.id(), c.peer(), reason, text);
    counters_.closed_bytes_out += client.connection().bytes_out();
    counters_.closed_writes += client.connection().writes();
    counters_.conflation_episodes += client.conflation_episodes();
    posts_.forget_client(c.id());
    counters_.trades_held += client.trades_held();
    if (client.held_trade_limit_reached()) ++counters_.held_trade_limit;
    if (client.is_link() && reason == CloseReason::kSlowConsumer) {
        ++counters_.links_cut_slow;
        log_->error("cascade link {} (application {}) cut as a slow consumer: {}",
                    client.describe(), client.application_id(), text);
    }
    clients_.on_closed(client, reason);  // destroyed after the callbacks, never inside a fan-out
}

void Server::on_directory_request(ClientSession& client) {
    wire::Directory directory;
    for (const auto& [id, info] : recovery_.directory()) {
        if (!client.sees_service(info.name())) continue;
        wire::ServiceInfo& out = *directory.add_services() = info;
        const auto group = groups_.groups().find(info.name());
        const bool grouped = group != groups_.groups().end() && group->second.members.size() >= 2;
        out.set_group_members(grouped ? static_cast<uint32_t>(group->second.members.size()) : 0);
        out.set_group_active(grouped &&
                             group->second.active == proto::service_source(info.service_id()));
    }
    client.deliver(FrameType::kDirectory, directory);
}

void Server::on_subscribe(ClientSession& client, const wire::Subscribe& request) {
    const auto& service = request.service_name();
    if (const auto refused = check_subscribe(request, client.limits().max_items_per_request)) {
        return fanout_.send_status(client, service.substr(0, proto::kMaxServiceNameBytes), "", 0,
                                   *refused);
    }
    std::vector<uint32_t> view(request.view_field_ids().begin(), request.view_field_ids().end());
    std::sort(view.begin(), view.end());
    view.erase(std::unique(view.begin(), view.end()), view.end());
    user_budget_ = {user_subscription_room(client), fanout_.subscription_count(client)};
    const int names = request.item_names_size();
    const bool resync =
        request.known_item_ids_size() == names && request.known_seqs_size() == names;
    for (int i = 0; i < names; ++i) {
        if (!client.is_open()) return;
        const HeldImage held =
            resync ? HeldImage{request.known_item_ids(i), request.known_seqs(i)} : HeldImage{};
        subscribe_one(client, service, request.item_names(i), request.conflate_ms(),
                      request.snapshot(), view, held);
    }
}

bool Server::still_current(const CachedItem& item, HeldImage held) {
    return held.item_id != 0 && held.item_id == item.id && held.item_seq == item.item_seq &&
           item.status.stream_state() == wire::STREAM_OPEN &&
           item.status.data_state() == wire::DATA_OK;
}

void Server::subscribe_one(ClientSession& client, const std::string& service,
                           const std::string& name, uint32_t conflate_ms, bool snapshot,
                           const std::vector<uint32_t>& view, HeldImage held) {
    if (const auto refused = check_item_name(name)) {
        return fanout_.send_status(client, service, name.substr(0, proto::kMaxItemNameBytes), 0,
                                   *refused);
    }
    if (!client.entitled(service, name)) return refuse_not_entitled(client, service, name, 0);
    if (!snapshot && fanout_.subscription_count(client) >= client.limits().max_subscriptions) {
        return fanout_.send_status(
            client, service, name, 0,
            make_status(wire::STREAM_CLOSED, wire::DATA_SUSPECT, wire::STATUS_LIMIT_REACHED,
                        "clients.max_subscriptions reached"));
    }
    if (!snapshot && user_budget_.room != SIZE_MAX) {
        const size_t now_held = fanout_.subscription_count(client);
        const size_t opened =
            now_held > user_budget_.client_start ? now_held - user_budget_.client_start : 0;
        if (opened >= user_budget_.room)
            return refuse_over_user_subscriptions(client, service, name);
    }
    const CachedItem* item = serving_item(service, name);
    const PendingSubscriber waiting{&client, snapshot, view, conflate_ms};
    if (item && item->has_image && cache_.keeps_images()) {
        if (!snapshot && fanout_.subscribe(client, item->id, view, conflate_ms)) {
            hold_if_interactive(item->id);  // served here: upstream has not heard of it
        }
        if (!snapshot && still_current(*item, held)) return fanout_.send_unchanged(client, *item);
        return fanout_.send_image(client, *item, &item->image, view, snapshot);
    }
    // Cache off: the item is live but its image is upstream.
    if (item && item->has_image) return recovery_.wait_for_image(*item, waiting);
    if (item && !snapshot && item->status.stream_state() != wire::STREAM_CLOSED) {
        // Known item without a valid image: subscribe now, the image follows.
        fanout_.subscribe(client, item->id, view, conflate_ms);
        fanout_.send_status(client, item->service_name, item->name, item->id, item->status);
        return recovery_.request_image(item->fed_by ? *item->fed_by : *item);
    }
    recovery_.wait_by_name(service, name, waiting);
}

void Server::on_unsubscribe(ClientSession& client, uint64_t item_id) {
    if (fanout_.unsubscribe(client, item_id)) release_if_unwatched(item_id);
}

// ---- housekeeping --------------------------------------------------------------------------

void Server::on_housekeeping() {
    const int64_t now = monotonic_ns();
    check_client_timeouts(now);
    recovery_.on_timer(now);
    posts_.expire(now);
    report_interest(now);
    apply_group_switches();  // a better-ranked source back for redundancy.hold_down_ms
    for (uint16_t source : upstream_->sources()) {
        if (upstream_->ready(source) && !recovery_.has_directory(source)) {
            upstream_->query_directory(source);
        }
    }
    for (auto& [id, client] : clients_) {
        if (client->is_link()) client->sample_link(now);
    }
    if (now - last_rate_sample_ns_ >= 1'000'000'000) {
        last_rate_sample_ns_ = now;
        for (auto& [id, client] : clients_) {
            if (client->is_open()) client->sample_rates(now);
        }
    }
    if (now - last_counter_log_ns_ >= 10'000'000'000) {
        last_counter_log_ns_ = now;
        log_counters(spdlog::level::debug);
    }
}

void Server::check_client_timeouts(int64_t now) {
    for (auto& [id, client] : clients_) {
        if (!client->is_open()) continue;
        client->keep_alive(now);
        const int64_t silent_ms = (now - client->connection().last_input_ns()) / 1'000'000;
        const int64_t open_ms = (now - client->connection().ready_ns()) / 1'000'000;
        if (client->connection().tls_handshaking())
            continue;  // its own deadline: tls.handshake_timeout_ms
        if (!client->logged_in() && open_ms >= config_.clients_login_timeout_ms) {
            client->connection().close(CloseReason::kNotLoggedIn,
                                       "no login within clients.login_timeout_ms of connecting");
        } else if (client->connection().frame_overdue(now, config_.clients_frame_timeout_ms)) {
            client->connection().close(
                CloseReason::kFrameTimeout,
                "a frame not finished within clients.frame_timeout_ms of its first byte");
        } else if (config_.clients_idle_timeout_ms > 0 &&
                   silent_ms >= config_.clients_idle_timeout_ms) {
            client->connection().close(CloseReason::kIdleTimeout,
                                       "silent for " + std::to_string(silent_ms) + " ms");
        }
    }
}

config::ReloadResult Server::reload(const ServerConfig& fresh,
                                    const std::vector<config::ConfigChange>& changes) {
    config::ReloadResult result;
    result.restart = auth_keys_needing_restart(config_, fresh, changes);
    if (json_) json_->set_publish_time(fresh.clients_ws_publish_time);
    // The users file is re-read on every SIGHUP, changed path or not.
    if (auth_.reload(auth_settings(fresh))) enforce_access();
    // Certificate files are re-read on every SIGHUP, changed names or not.
    if (ws_listeners_)
        ws_listeners_->reload_tls(tls_server_settings(fresh), fresh.tls_handshake_timeout_ms);
    if (!listeners_.reload_tls(tls_server_settings(fresh), fresh.tls_handshake_timeout_ms))
        result.failed = config::changed_under(changes, "tls");
    return result;
}

void Server::shutdown(const std::string& why) {
    if (!clients_.shutting_down()) {
        listeners_.disable();
        if (ws_listeners_) ws_listeners_->disable();
        log_->info("shutting down on {}: telling {} client(s), up to {} ms to flush", why,
                   clients_.size(), config_.shutdown_grace_ms);
    }
    clients_.begin_shutdown(why, std::chrono::milliseconds(config_.shutdown_grace_ms));
}

void Server::on_stopped(const std::string& why, size_t cut) {
    log_->info("shutdown complete ({}); {} client(s) cut off with output unsent", why, cut);
    log_counters(spdlog::level::info);
    loop_.stop();
}

}  // namespace mdcast::server
