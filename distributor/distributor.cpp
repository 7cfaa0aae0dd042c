#include "distributor/distributor.h"

#include "common/auth/auth_keys.h"
#include "common/clock.h"
#include "common/daemon/daemon_keys.h"
#include "common/daemon/daemon_main.h"
#include "common/daemon/process_metrics.h"
#include "common/daemon/reload_status.h"
#include "proto/field_values.h"
#include "proto/limits.h"
#include "proto/source_ids.h"

namespace mdcast::distributor {

namespace {

constexpr size_t kStatsItems = 1000;  // items listed in /stats

// Epochs are ordered: the low 48 bits are the start time in milliseconds
// (CLOCK_REALTIME), so a later start has a larger epoch and servers can refuse
// an older one (a replayed packet from before a restart, docs/hardening.md).
uint64_t new_epoch(uint16_t source) {
    return proto::make_epoch(source, static_cast<uint64_t>(realtime_ns() / 1'000'000));
}

BackboneSender::Settings sender_settings(const DistributorConfig& config, uint16_t control_port,
                                         const PacketSigner* signer) {
    BackboneSender::Settings settings;
    settings.endpoints = multicast_endpoints(config.multicast_endpoint(),
                                             config.backbone_extra_groups, "backbone.extra_groups");
    settings.max_datagram_bytes = config.backbone_max_datagram_bytes;
    settings.flush_interval_us = config.backbone_flush_interval_us;
    settings.heartbeat_min_us = config.backbone_heartbeat_min_us;
    settings.heartbeat_max_ms = config.backbone_heartbeat_max_ms;
    settings.send_buffer_bytes = config.backbone_send_buffer_bytes;
    settings.segmentation_offload = config.backbone_segmentation_offload;
    settings.control_port = control_port;
    settings.retransmit_window_bytes = config.backbone_retransmit_window_bytes;
    settings.retransmit_window_ms = config.backbone_retransmit_window_ms;
    settings.repair_linger_us = config.backbone_repair_linger_us;
    settings.retransmit_rate_bytes_per_s = config.backbone_retransmit_rate_bytes_per_s;
    settings.max_repairs_per_nak = config.backbone_max_repairs_per_nak;
    settings.repairs_per_source_per_s = config.backbone_repairs_per_source_per_s;
    settings.data_rate_bytes_per_s = config.backbone_data_rate_bytes_per_s;
    settings.max_backlog_bytes = config.backbone_max_backlog_bytes;
    settings.signer = signer;
    settings.send_loss = {config.loss_send_rate, config.loss_send_burst_every,
                          config.loss_send_burst_length, config.loss_seed};
    return settings;
}

InterestTracker::Settings interest_settings(const DistributorConfig& config) {
    InterestTracker::Settings settings;
    settings.lease_ns = int64_t{config.interest_lease_ms} * 1'000'000;
    settings.hold_ns = int64_t{config.release_hold_ms} * 1'000'000;
    return settings;
}

// A server, as interest leases know it: its control socket's address and port.
uint64_t server_key(const sockaddr_in& from) {
    return uint64_t{ntohl(from.sin_addr.s_addr)} << 16 | ntohs(from.sin_port);
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
      publisher_flusher_(loop, std::chrono::microseconds(0)),
      signer_(
          PacketSigner::from_files(config.backbone_key_file, config.backbone_previous_key_file)),
      registry_(config.distributor_id, config.max_services, config.max_items),
      interest_(interest_settings(config)),
      control_(loop, config.backbone_interface, config.backbone_control_port, *this,
               LossSettings{config.loss_control_receive_rate, 0, 0, config.loss_seed + 1},
               signer_.get()),
      backbone_(loop, sender_settings(config, control_.port(), signer_.get()),
                new_epoch(config.distributor_id),
                [this](bool congested) { on_backbone_congestion(congested); }),
      listeners_(
          loop, listener_settings(config),
          [this](int fd, std::string peer, bool tls) { on_accept(fd, std::move(peer), tls); }),
      sessions_(loop, "publisher", "distributor shutting down",
                {nullptr, [this](const std::string& why, size_t cut) { on_stopped(why, cut); }}),
      housekeeping_(loop, [this] { on_housekeeping(); }),
      spinner_(loop, std::chrono::microseconds(config.busy_poll_us)),
      started_ns_(monotonic_ns()) {
    housekeeping_.start_periodic(std::chrono::seconds(1));
    register_metrics();
    if (config.admin_enabled) {
        admin_ = std::make_unique<AdminHttp>(
            loop, config.admin_address, config.admin_port, metrics_, admin_handlers(),
            config.admin_token_file.empty() ? "" : AdminHttp::load_token(config.admin_token_file));
        log_->info("admin http on {}:{} (/metrics /healthz /stats /info{})", config.admin_address,
                   admin_->port(), config.admin_token_file.empty() ? "" : "; POST /reload");
    }
    log_->info(
        "distributor {}: publishers {}; backbone {}:{}{} via {} ttl {}; control port {}; "
        "epoch {:016x}",
        config.distributor_id, listeners_.describe(), config.backbone_group, config.backbone_port,
        config.backbone_extra_groups.empty()
            ? std::string()
            : " (+" + std::to_string(config.backbone_extra_groups.size()) + " redundant groups)",
        config.backbone_interface, config.backbone_ttl, control_.port(), backbone_.epoch());
}

Distributor::~Distributor() = default;

void Distributor::on_accept(int fd, std::string peer, bool tls) {
    const uint64_t id = sessions_.next_id();
    TcpConnection::Limits limits;
    limits.max_frame_body_bytes = config_.publishers_max_frame_bytes;
    limits.max_output_bytes = config_.publishers_max_output_bytes;
    if (tls) limits.tls = listeners_.tls_limits();
    // Publishers ping three times per idle timeout, so a quiet one is not closed.
    auto session = std::make_unique<PublisherSession>(
        *this, registry_, backbone_, publisher_counters_, config_.publishers_idle_timeout_ms / 3);
    auto connection =
        std::make_unique<TcpConnection>(loop_, publisher_flusher_, fd, id, peer,
                                        proto::kPublisherToDistributorTypes, limits, *session);
    PublisherSession* raw = session.get();
    if (!sessions_.admit(std::move(session), std::move(connection),
                         config_.publishers_max_connections, "publishers.max_connections")) {
        return;
    }
    if (backbone_.congested()) raw->connection().pause_reading();
    log_->info("publisher connection {} from {}{}", id, peer, tls ? " (TLS)" : "");
}

void Distributor::on_publisher_closed(PublisherSession& session, CloseReason reason,
                                      const std::string& text) {
    const uint64_t id = session.connection().id();
    if (is_tls_handshake_failure(reason)) {
        listeners_.log_handshake_failure(id, session.connection().peer(), reason, text);
    }
    const auto released = registry_.release(id);
    for (uint32_t service_id : released) {
        registry_.mark_service_items_suspect(service_id);
        log_->warn("service {} is down: its publisher went away",
                   registry_.service(service_id)->name);
    }
    if (!released.empty()) on_directory_changed();
    sessions_.on_closed(session, reason);  // destroyed later, never inside its own callback
}

void Distributor::on_directory_changed() {
    backbone_.send(proto::FrameType::kDirectory, registry_.directory());
}

void Distributor::on_directory_query() {
    on_directory_changed();
}

void Distributor::on_nak(const wire::Nak& nak, const sockaddr_in& from) {
    backbone_.on_nak(nak, ntohl(from.sin_addr.s_addr));
}

// Back-pressure: while the backbone backlog is full, publishers are not read,
// so their TCP windows close instead of the distributor's memory growing.
void Distributor::on_backbone_congestion(bool congested) {
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

// An image when there is one (multicast: every server caching the item gains);
// a NOT_FOUND only to the server that asked (one client's unknown names must
// not cost the other servers anything, docs/hardening.md).
void Distributor::on_image_request(const wire::ImageRequest& request, const sockaddr_in& from) {
    const ServiceEntry* service = request.service_id() != 0
                                      ? registry_.service(request.service_id())
                                      : registry_.service(request.service_name());
    ItemEntry* item = nullptr;
    if (request.item_id() != 0) {
        item = registry_.item(request.item_id());
    } else if (service) {
        item = registry_.find_item(service->id, request.item_name());
    }
    const bool interactive = service && service->mode == wire::SERVICE_INTERACTIVE;
    if (item && item->has_image && !item->unwanted) {
        service = registry_.service(item->service_id);
        if (interactive) interest_.renew(item->id, service->id, server_key(from), monotonic_ns());
        wire::Refresh refresh;
        refresh.set_item_id(item->id);
        refresh.set_item_seq(item->item_seq);
        refresh.set_clear_cache(true);
        refresh.set_solicited(true);
        refresh.set_service_id(service->id);
        refresh.set_service_name(service->name);
        refresh.set_item_name(item->name);
        refresh.mutable_status()->set_stream_state(wire::STREAM_OPEN);
        refresh.mutable_status()->set_data_state(
            service->state == wire::SERVICE_UP ? item->data_state : wire::DATA_SUSPECT);
        item->image.to_field_list(*refresh.mutable_fields());
        if (backbone_.send(proto::FrameType::kRefresh, refresh)) return;
    }
    if (interactive) item = ask_source(*service, item, request.item_name(), server_key(from));
    // No image to give: say why, with the names so servers can match it.
    wire::ItemStatus status;
    status.set_item_id(item ? item->id : 0);
    status.set_service_id(service ? service->id : 0);
    status.set_service_name(service ? service->name : request.service_name());
    status.set_item_name(item ? item->name : request.item_name());
    auto* s = status.mutable_status();
    if (!item) {
        s->set_stream_state(wire::STREAM_CLOSED);
        s->set_data_state(wire::DATA_SUSPECT);
        s->set_code(wire::STATUS_NOT_FOUND);
        s->set_text(service ? "no such item" : "no such service");
    } else {
        s->set_stream_state(wire::STREAM_OPEN);
        s->set_data_state(wire::DATA_SUSPECT);
        s->set_code(wire::STATUS_RECOVERING);
        s->set_text("waiting for an image from the source");
    }
    status.set_service_name(status.service_name().substr(0, proto::kMaxServiceNameBytes));
    status.set_item_name(status.item_name().substr(0, proto::kMaxItemNameBytes));
    if (!item) return control_.reply_not_found(status, from);
    backbone_.send(proto::FrameType::kItemStatus, status);
}

// Interactive (sink-driven) services publish what is asked for: an item
// without an image is asked of the service's source, registered first when
// nobody asked for it before. `server` holds a lease on it from now. Returns
// the item (nullptr: unknown, no source).
ItemEntry* Distributor::ask_source(const ServiceEntry& service, ItemEntry* item,
                                   const std::string& name, uint64_t server) {
    PublisherSession* owner = sessions_.find(service.owner_session);
    if (!owner || !owner->connection().is_open()) return item;
    if (!item) item = registry_.register_item(service.id, name);  // refuses an invalid name
    if (item && interest_.should_request(item->id, service.id, server, monotonic_ns())) {
        owner->request_item(service, *item);
    }
    return item;
}

// A server's interest in items of interactive services (wire Interest): only
// registered items of interactive services count, and a server only ever
// renews or releases its own leases. Ids of another epoch (a server not yet
// past this distributor's restart) name other items: ignored.
void Distributor::on_interest(const wire::Interest& interest, const sockaddr_in& from) {
    if (interest.epoch() != backbone_.epoch()) {
        ++interest_other_epoch_;
        return;
    }
    const uint64_t server = server_key(from);
    const int64_t now = monotonic_ns();
    for (uint64_t id : interest.released_item_ids()) interest_.release(id, server, now);
    for (uint64_t id : interest.held_item_ids()) renew_interest(id, server, now);
}

// A renewal for an item nobody wanted (dropped meanwhile: every renewal of
// its server lost for a lease time) is new interest: its source is asked again.
void Distributor::renew_interest(uint64_t item_id, uint64_t server, int64_t now) {
    const ItemEntry* item = registry_.item(item_id);
    if (!item) return;
    const ServiceEntry* service = registry_.service(item->service_id);
    if (!service || service->mode != wire::SERVICE_INTERACTIVE) return;
    if (!interest_.renew(item_id, service->id, server, now)) return;
    PublisherSession* owner = sessions_.find(service->owner_session);
    if (owner && owner->connection().is_open()) owner->request_item(*service, *item);
}

// Items nobody has wanted for interactive.release_hold_ms: their sources are
// told to stop (one Unsubscribe per source), and servers that cache them are
// told the image is no longer current, so the next subscriber anywhere gets a
// fresh image from the source, never this stale one.
void Distributor::drop_unwanted(int64_t now) {
    std::unordered_map<uint64_t, std::vector<uint64_t>> by_owner;
    for (const auto& dropped : interest_.expire(now)) {
        ItemEntry* item = registry_.item(dropped.item_id);
        const ServiceEntry* service = registry_.service(dropped.service_id);
        if (!item || !service || item->closed) continue;  // closed: its source ended it
        item->unwanted = true;
        item->data_state = wire::DATA_SUSPECT;
        by_owner[service->owner_session].push_back(item->id);
        wire::ItemStatus status;
        status.set_item_id(item->id);
        status.set_service_id(service->id);
        status.set_service_name(service->name);
        status.set_item_name(item->name);
        auto* s = status.mutable_status();
        s->set_stream_state(wire::STREAM_OPEN);
        s->set_data_state(wire::DATA_SUSPECT);
        s->set_code(wire::STATUS_RECOVERING);
        s->set_text("no subscriber left: not published; a new subscription asks the source");
        backbone_.send(proto::FrameType::kItemStatus, status);
    }
    for (const auto& [session, ids] : by_owner) {
        PublisherSession* owner = sessions_.find(session);
        if (!owner || !owner->connection().is_open()) continue;  // gone: nothing to stop
        owner->unsubscribe_items(ids);
        unsubscribes_sent_ += ids.size();
        log_->info("publisher connection {}: {} item(s) no server wants any more, unsubscribed",
                   session, ids.size());
    }
}

// A source (re)announced an interactive service: it is asked for every item
// some server wanted, so their subscribers get fresh images.
void Distributor::on_service_announced(PublisherSession& session, const ServiceEntry& service) {
    if (service.mode != wire::SERVICE_INTERACTIVE) return;
    for (uint64_t id : interest_.rerequest_service(service.id, monotonic_ns())) {
        if (const ItemEntry* item = registry_.item(id)) session.request_item(service, *item);
    }
}

void Distributor::on_housekeeping() {
    const int64_t now = monotonic_ns();
    drop_unwanted(now);
    if (registry_.take_counts_changed()) on_directory_changed();  // item_count is right
    for (auto& [id, session] : sessions_) {
        TcpConnection& connection = session->connection();
        if (!connection.is_open()) continue;
        const int64_t silent_ms = (now - connection.last_input_ns()) / 1'000'000;
        const int64_t open_ms = (now - connection.ready_ns()) / 1'000'000;
        if (connection.tls_handshaking()) continue;  // its own deadline: tls.handshake_timeout_ms
        if (!session->logged_in() && open_ms >= config_.publishers_login_timeout_ms) {
            connection.close(CloseReason::kNotLoggedIn,
                             "no login within publishers.login_timeout_ms of connecting");
        } else if (config_.publishers_idle_timeout_ms > 0 &&
                   silent_ms >= config_.publishers_idle_timeout_ms) {
            connection.close(CloseReason::kIdleTimeout,
                             "silent for " + std::to_string(silent_ms) + " ms");
        }
    }
    if ((now - started_ns_) / 1'000'000'000 % 10 == 0) log_counters(spdlog::level::debug);
}

// Every counter of the distributor, declared once: /metrics and the counters
// log line both read this registry.
void Distributor::register_metrics() {
    auto& m = metrics_;
    const auto& b = backbone_.counters();
    const auto& c = control_.counters();
    const auto& p = publisher_counters_;
    m.gauge("publishers", "Publisher connections", [this] { return sessions_.size(); });
    m.gauge("services", "Services announced", [this] { return registry_.service_count(); });
    m.gauge("items", "Items registered", [this] { return registry_.item_count(); });
    m.counter("refreshes_total", "Refreshes from publishers", [&p] { return p.refreshes; });
    m.counter("updates_total", "Updates from publishers", [&p] { return p.updates; });
    m.counter("statuses_total", "Item statuses from publishers", [&p] { return p.statuses; });
    listeners_.register_metrics(m, [this] {
        double open = 0;
        for (const auto& [id, session] : sessions_)
            open += session->connection().is_open() && session->connection().is_tls();
        return open;
    });
    for (size_t i = 0; i < kCloseReasonCount; ++i) {
        const std::string reason(close_reason_name(static_cast<CloseReason>(i)));
        m.counter("closes_total", "Publisher connections closed, by reason", {{"reason", reason}},
                  [this, i] { return sessions_.closes(i); });
    }
    register_process_metrics(m, "mdcast-distributor");
    m.counter("rejected_total", "Publisher messages refused", [&p] { return p.rejected_messages; });
    m.counter("invalid_content_total",
              "Publisher messages refused alone for invalid content (not UTF-8); connection kept",
              [&p] { return p.invalid_content; });
    m.counter("packets_total", "Backbone datagrams sent", [&b] { return b.packets_sent; });
    m.counter("segmented_packets_total",
              "Backbone datagrams sent in UDP segmentation offload runs (all groups)",
              [this] { return backbone_.segmented_datagrams(); });
    m.counter("padding_bytes_total",
              "Zero bytes the segmented datagrams carried to make a run equal-size (all groups)",
              [this] { return backbone_.padding_bytes(); });
    m.gauge("segmentation_offload",
            "1 while the primary group's datagrams go out with UDP segmentation offload",
            [this] { return backbone_.segmenting() ? 1 : 0; });
    m.counter("busy_poll_passes_total",
              "Loop passes made without sleeping because of distributor.busy_poll_us",
              [this] { return spinner_.passes(); });
    m.counter("bytes_total", "Backbone bytes sent", [&b] { return b.bytes_sent; });
    m.counter("messages_total", "Messages sent on the backbone", [&b] { return b.messages_sent; });
    m.counter("heartbeats_total", "Heartbeats sent", [&b] { return b.heartbeats_sent; });
    m.counter("send_failures_total", "Datagrams the kernel refused",
              [&b] { return b.send_failures; });
    m.counter("oversize_total", "Messages larger than a datagram, refused",
              [&b] { return b.oversize_messages; });
    m.counter("naks_total", "NAKs received", [&b] { return b.naks_received; });
    m.counter("nak_sequences_total", "Sequences asked for in NAKs",
              [&b] { return b.nak_sequences; });
    m.counter("repairs_total", "Repairs sent", [&b] { return b.repairs_sent; });
    m.counter("repair_bytes_total", "Bytes of repairs sent", [&b] { return b.repair_bytes; });
    m.counter("naks_lingering_total", "NAKs within repair_linger_us, not re-sent",
              [&b] { return b.naks_lingering; });
    m.counter("naks_beyond_window_total", "NAKs behind the trailing edge",
              [&b] { return b.naks_beyond_window; });
    m.counter("naks_invalid_total", "NAK ranges of sequences not sent yet",
              [&b] { return b.naks_invalid; });
    m.counter("nak_sequences_over_cap_total",
              "NAK sequences beyond backbone.max_repairs_per_nak in one NAK, ignored",
              [&b] { return b.nak_sequences_over_cap; });
    m.counter("repairs_source_limited_total",
              "Repairs refused: the NAK's source address spent backbone.repairs_per_source_per_s",
              [&b] { return b.repairs_source_limited; });
    m.counter("retransmit_rate_limited_total", "Repairs skipped by the retransmit rate limit",
              [&b] { return b.retransmit_rate_limited; });
    m.counter("data_rate_limited_total", "Datagrams that waited in the rate-limit backlog",
              [&b] { return b.data_rate_limited; });
    m.counter("injected_drops_total", "Packets dropped by testing.loss",
              [&b, &c] { return b.injected_drops + c.injected_drops; });
    m.gauge("window_packets", "Datagrams held for repair",
            [this] { return backbone_.window().packets(); });
    m.gauge("window_bytes", "Bytes held for repair", [this] { return backbone_.window().bytes(); });
    m.counter("image_requests_total", "Image requests from servers",
              [&c] { return c.image_requests; });
    m.counter("not_found_replies_total",
              "Image requests for unknown names, answered NOT_FOUND by unicast to the asker",
              [&c] { return c.not_found_replies; });
    m.counter("directory_queries_total", "Directory queries from servers",
              [&c] { return c.directory_queries; });
    m.counter("malformed_control_total", "Control datagrams dropped as malformed",
              [&c] { return c.malformed; });
    m.counter("bad_signatures_total", "Control datagrams unsigned or forged, dropped",
              [&c] { return c.bad_signatures; });
    const auto& i = interest_.counters();
    m.gauge("interest_items", "Items of interactive services some server wants (or held)",
            [this] { return interest_.size(); });
    m.gauge("interest_leases", "Interest leases held by servers on interactive items",
            [this] { return interest_.lease_count(); });
    m.counter("interest_messages_total", "Interest messages (renewals, releases) from servers",
              [&c] { return c.interest_messages; });
    m.counter("interest_renewals_total", "Item interest renewed or started by a server's Interest",
              [&i] { return i.renewals; });
    m.counter("interest_released_total",
              "Item interest released by a server (last subscriber left)",
              [&i] { return i.releases; });
    m.counter("interest_leases_expired_total",
              "Item interest leases not renewed within interactive.interest_lease_ms",
              [&i] { return i.leases_expired; });
    m.counter("interest_refused_total",
              "Item interest refused: the item already has the most servers a lease is kept for",
              [&i] { return i.refused; });
    m.counter("interest_other_epoch_total", "Interest messages for another epoch, ignored",
              [this] { return interest_other_epoch_; });
    m.counter("unsubscribes_sent_total",
              "Items no server wants any more, unsubscribed at their interactive source",
              [this] { return unsubscribes_sent_; });
    m.counter("refused_connections_total", "Publisher connections refused",
              [this] { return sessions_.refused(); });
    auth_.register_metrics(m);
    register_reload_metrics(m);
}

void Distributor::log_counters(spdlog::level::level_enum level) {
    log_->log(level, "{}", metrics_.log_line());
}

// Publishers, services (with their owner and state) and items (up to
// kStatsItems of them; `item_count` says how many there are).
std::string Distributor::stats_json() const {
    using proto::json_escape;
    std::string out =
        "{\"epoch\":\"" + fmt::format("{:016x}", backbone_.epoch()) + "\",\"publishers\":[";
    bool first = true;
    for (const auto& [id, session] : sessions_) {
        const TcpConnection& c = session->connection();
        if (!c.is_open()) continue;
        out += fmt::format(
            "{}{{\"id\":{},\"peer\":\"{}\",\"user\":\"{}\",\"bytes_in\":{},\"frames_in\":{}}}",
            first ? "" : ",", id, json_escape(c.peer()), json_escape(session->user()), c.bytes_in(),
            c.frames_in());
        first = false;
    }
    out += "],\"services\":[";
    first = true;
    registry_.for_each_service([&](const ServiceEntry& service) {
        out += fmt::format(
            "{}{{\"id\":{},\"name\":\"{}\",\"mode\":\"{}\",\"state\":\"{}\","
            "\"publisher\":{},\"items\":{}}}",
            first ? "" : ",", service.id, json_escape(service.name),
            wire::ServiceMode_Name(service.mode), wire::ServiceState_Name(service.state),
            service.owner_session, service.item_count);
        first = false;
    });
    out += fmt::format("],\"item_count\":{},\"items\":[", registry_.item_count());
    size_t listed = 0;
    registry_.for_each_item([&](const ItemEntry& item) {
        if (listed >= kStatsItems) return;
        out += fmt::format(
            "{}{{\"id\":{},\"service_id\":{},\"name\":\"{}\",\"sequence\":{},"
            "\"data_state\":\"{}\",\"has_image\":{},\"closed\":{}}}",
            listed++ ? "," : "", item.id, item.service_id, json_escape(item.name), item.item_seq,
            wire::DataState_Name(item.data_state), item.has_image ? "true" : "false",
            item.closed ? "true" : "false");
    });
    return out + "],\"metrics\":" + metrics_.json() + "}";
}

bool Distributor::replace_earlier_connection(PublisherSession& claimant, uint64_t owner_session) {
    PublisherSession* owner = sessions_.find(owner_session);
    if (!owner || owner == &claimant || !owner->logged_in() || owner->user() != claimant.user() ||
        owner->application_id() != claimant.application_id() ||
        owner->position() != claimant.position()) {
        return false;
    }
    log_->warn(
        "publisher connection {} ({}) replaces connection {} of the same publisher "
        "(user {}, application {}, position {}): the earlier one is closed",
        claimant.connection().id(), claimant.connection().peer(), owner_session, claimant.user(),
        claimant.application_id(), claimant.position());
    owner->connection().close(CloseReason::kKicked,
                              "replaced by a newer connection of the same publisher");
    return true;
}

AdminHttp::Handlers Distributor::admin_handlers() {
    AdminHttp::Handlers handlers;
    handlers.health = [] { return std::pair{true, std::string("ok")}; };
    handlers.stats = [this] { return stats_json(); };
    handlers.info = [this] {
        const size_t publishers = sessions_.open_count();
        return fmt::format(
            "{{\"daemon\":\"mdcast-distributor\",\"distributor_id\":{},\"epoch\":\"{:016x}\",{},"
            "\"publishers\":{},\"services\":{},\"items\":{},\"keys_waiting_for_restart\":{},"
            "\"config\":{}}}",
            config_.distributor_id, backbone_.epoch(), process_info_json(), publishers,
            registry_.service_count(), registry_.item_count(),
            json_string_list(keys_waiting_for_restart()),
            config_json(distributor_schema().json_values(config_)));
    };
    handlers.act = [this](const std::string& action, const AdminHttp::Query&) {
        if (action != "reload") return AdminHttp::Reply{404, "the distributor only reloads\n"};
        log_->info("reload asked for on the admin endpoint");
        return reload_reply();  // the SIGHUP path, run now: the answer says what it did
    };
    return handlers;
}

config::ReloadResult Distributor::reload(const DistributorConfig& fresh,
                                         const std::vector<config::ConfigChange>& changes) {
    // Limits checked when a connection or request arrives apply from now on.
    std::vector<std::string> reloadable{"publishers.max_connections"};
    for (auto& key : reloadable_auth_keys(config_, fresh)) reloadable.push_back(std::move(key));
    config::ReloadResult result;
    result.applied = distributor_schema().apply_changes(changes, reloadable, fresh, config_);
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
    if (listeners_.reload_tls(tls_server_settings(fresh), fresh.tls_handshake_timeout_ms)) {
        auto tls_keys =
            distributor_schema().apply_changes(changes, kTlsReloadableKeys, fresh, config_);
        result.applied.insert(result.applied.end(), tls_keys.begin(), tls_keys.end());
    } else {
        result.failed =
            config::Schema<DistributorConfig>::changed_among(changes, kTlsReloadableKeys);
    }
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
                    if (verdict.accepted()) return asker->accept_login();
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
    backbone_.flush();
    log_->info("shutdown complete ({}); {} publisher(s) cut off with output unsent", why, cut);
    log_counters(spdlog::level::info);
    loop_.stop();
}

}  // namespace mdcast::distributor
