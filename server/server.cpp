#include "server/server.h"

#include <unistd.h>

#include <algorithm>

#include "common/auth/auth_keys.h"
#include "common/clock.h"
#include "common/daemon/daemon_keys.h"
#include "proto/field_values.h"
#include "proto/source_ids.h"

namespace mdcast::server {

using proto::FrameType;

namespace {

constexpr size_t kMaxNameBytes = 1024;
constexpr size_t kMaxViewFields = 1024;

std::string make_server_id(uint32_t instance) {
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    return "mdcast-server/" + std::string(host) + "/" + std::to_string(instance);
}

BackboneReceiver::Settings receiver_settings(const ServerConfig& config,
                                             const PacketSigner* signer) {
    BackboneReceiver::Settings settings;
    settings.groups = multicast_endpoints(config.multicast_endpoint(), config.backbone_extra_groups,
                                          "backbone.extra_groups");
    settings.max_sources = config.backbone_max_sources;
    settings.signer = signer;
    settings.receive_buffer_bytes = config.backbone_receive_buffer_bytes;
    settings.max_datagram_bytes = config.backbone_max_datagram_bytes;
    auto& r = settings.recovery;
    r.nak_backoff_min_ns = int64_t{config.backbone_nak_backoff_min_us} * 1000;
    r.nak_backoff_max_ns = int64_t{config.backbone_nak_backoff_max_us} * 1000;
    r.nak_retry_ns = int64_t{config.backbone_nak_retry_us} * 1000;
    r.nak_max_attempts = config.backbone_nak_max_attempts;
    r.max_buffered_bytes = config.backbone_reorder_buffer_bytes;
    r.max_gap_packets = config.backbone_max_gap_packets;
    r.jump_confirmations = config.backbone_jump_confirmations;
    r.seed = config.loss_seed ^ (uint64_t{config.instance} << 32) ^
             static_cast<uint64_t>(monotonic_ns());
    settings.source_silent_ms = config.backbone_source_silent_ms;
    settings.rtt_probe_interval_ms = config.backbone_rtt_probe_interval_ms;
    settings.receive_loss = {config.loss_receive_rate,           config.loss_receive_burst_every,
                             config.loss_receive_burst_length,   config.loss_seed + config.instance,
                             config.loss_receive_duplicate_rate, config.loss_receive_reorder_rate};
    settings.control_send_loss = {config.loss_control_send_rate, 0, 0,
                                  config.loss_seed + 1000 + config.instance};
    return settings;
}

wire::Status make_status(wire::StreamState stream, wire::DataState data, wire::StatusCode code,
                         const std::string& text) {
    wire::Status status;
    status.set_stream_state(stream);
    status.set_data_state(data);
    status.set_code(code);
    status.set_text(text);
    return status;
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
      output_pool_(config.output_pool_bytes, config.output_guaranteed_bytes,
                   config.output_max_bytes),
      cache_(config.cache_hash_table_size, config.cache_max_items, config.cache_enable_cache),
      pending_(config.cache_max_pending_requests),
      signer_(
          PacketSigner::from_files(config.backbone_key_file, config.backbone_previous_key_file)),
      backbone_(loop, receiver_settings(config, signer_.get()), *this),
      listeners_(
          loop, listener_settings(config),
          [this](int fd, std::string peer, bool tls) { on_accept(fd, std::move(peer), tls); }),
      reaper_(loop, [this] { reap_closed(); }),
      housekeeping_(loop, [this] { on_housekeeping(); }),
      grace_timer_(loop, [this] { finish_shutdown("grace period over"); }) {
    if (!config.cache_enable_cache && config.output_slow_consumer_policy == "conflate") {
        throw std::runtime_error(
            "output.slow_consumer_policy: conflate needs cache.enable_cache: true (conflated "
            "updates are built from the cached images)");
    }
    housekeeping_.start_periodic(std::chrono::milliseconds(100));
    register_metrics();
    if (config.admin_enabled) {
        admin_ = std::make_unique<AdminHttp>(
            loop, config.admin_address, config.instance_admin_port(), metrics_,
            AdminHttp::Handlers{[this] { return health(); }, [this] { return stats_json(); }});
        log_->info("admin http on {}:{} (/metrics /healthz /stats)", config.admin_address,
                   admin_->port());
    }
    log_->info("{}: clients {}; {} writes{}", server_id_, listeners_.describe(),
               config.output_timed_writes ? "timed" : "natural-batching",
               config.output_timed_writes
                   ? " every " + std::to_string(config.output_flush_interval_ms) + " ms"
                   : "");
}

Server::~Server() = default;

// ---- clients -------------------------------------------------------------------------------

void Server::on_accept(int fd, std::string peer, bool tls) {
    const uint64_t id = next_connection_id_++;
    TcpConnection::Limits limits;
    limits.max_frame_body_bytes = config_.clients_max_frame_bytes;
    limits.max_output_bytes = config_.output_max_bytes;
    // Clients send small requests: a small read buffer keeps an idle connection
    // cheap (it grows for a larger frame, up to clients.max_frame_bytes).
    limits.read_chunk_bytes = 4096;
    limits.pool = &output_pool_;
    limits.tcp_nodelay = config_.output_tcp_nodelay;
    limits.send_buffer_bytes = static_cast<int>(config_.output_tcp_send_buffer_bytes);
    if (tls) limits.tls = listeners_.tls_limits();
    const ClientLimits client_limits{
        config_.output_slow_consumer_policy == "conflate", config_.clients_max_items_per_request,
        config_.clients_max_subscriptions, config_.clients_heartbeat_interval_ms,
        config_.clients_max_frame_bytes};
    auto client = std::make_unique<ClientSession>(*this, client_limits, server_id_);
    ClientSession* raw = client.get();
    clients_[id] = std::move(client);
    raw->attach(std::make_unique<TcpConnection>(loop_, flusher_, fd, id, peer,
                                                proto::kClientToServerTypes, limits, *raw));
    if (shutting_down_ || clients_.size() > config_.clients_max_connections) {
        ++counters_.clients_refused;
        raw->connection().close(
            shutting_down_ ? CloseReason::kShutdown : CloseReason::kLimitReached,
            shutting_down_ ? "server shutting down" : "clients.max_connections reached");
        return;
    }
    ++counters_.clients_accepted;
    log_->debug("client {} connected from {}{}", id, peer, tls ? " (TLS)" : "");
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
    ++counters_.closes[static_cast<size_t>(reason)];
    counters_.closed_bytes_out += client.connection().bytes_out();
    counters_.closed_writes += client.connection().writes();
    counters_.conflation_episodes += client.conflation_episodes();
    closed_clients_.push_back(client.connection().id());
    reaper_.fire();  // the table is changed after the callbacks, never inside a fan-out
}

void Server::reap_closed() {
    for (uint64_t id : closed_clients_) {
        const auto it = clients_.find(id);
        if (it == clients_.end()) continue;
        ClientSession* client = it->second.get();
        for (const auto& [item_id, view] : client->subscriptions())
            subscriptions_.remove(item_id, client);
        pending_.remove_client(client);
        clients_.erase(it);
    }
    closed_clients_.clear();
    if (shutting_down_ && clients_.empty()) finish_shutdown("every client closed");
}

void Server::on_directory_request(ClientSession& client) {
    wire::Directory directory;
    for (const auto& [id, info] : directory_) {
        if (client.sees_service(info.name())) *directory.add_services() = info;
    }
    client.deliver(FrameType::kDirectory, directory);
}

void Server::on_subscribe(ClientSession& client, const wire::Subscribe& request) {
    const auto& service = request.service_name();
    if (service.empty() || service.size() > kMaxNameBytes ||
        request.view_field_ids_size() > static_cast<int>(kMaxViewFields)) {
        return send_status(
            client, service.substr(0, kMaxNameBytes), "", 0,
            make_status(wire::STREAM_CLOSED, wire::DATA_SUSPECT, wire::STATUS_INVALID_REQUEST,
                        "service name missing or too long, or view too large"));
    }
    if (request.item_names_size() > static_cast<int>(client.limits().max_items_per_request)) {
        return send_status(
            client, service, "", 0,
            make_status(wire::STREAM_CLOSED, wire::DATA_SUSPECT, wire::STATUS_LIMIT_REACHED,
                        "more than clients.max_items_per_request (" +
                            std::to_string(client.limits().max_items_per_request) +
                            ") items in one request"));
    }
    std::vector<uint32_t> view(request.view_field_ids().begin(), request.view_field_ids().end());
    std::sort(view.begin(), view.end());
    view.erase(std::unique(view.begin(), view.end()), view.end());
    for (const auto& name : request.item_names()) {
        if (!client.is_open()) return;
        subscribe_one(client, service, name, request.snapshot(), view);
    }
}

void Server::subscribe_one(ClientSession& client, const std::string& service,
                           const std::string& name, bool snapshot,
                           const std::vector<uint32_t>& view) {
    if (name.empty() || name.size() > kMaxNameBytes) {
        return send_status(
            client, service, name.substr(0, kMaxNameBytes), 0,
            make_status(wire::STREAM_CLOSED, wire::DATA_SUSPECT, wire::STATUS_INVALID_REQUEST,
                        "item name missing or too long"));
    }
    if (!client.entitled(service, name)) return refuse_not_entitled(client, service, name, 0);
    if (!snapshot && client.subscriptions().size() >= client.limits().max_subscriptions) {
        return send_status(
            client, service, name, 0,
            make_status(wire::STREAM_CLOSED, wire::DATA_SUSPECT, wire::STATUS_LIMIT_REACHED,
                        "clients.max_subscriptions reached"));
    }
    CachedItem* item = cache_.find(service, name);
    if (item && item->has_image && cache_.keeps_images()) {
        if (!snapshot) add_subscription(client, *item, view);
        return send_image(client, *item, view, snapshot);
    }
    if (item && item->has_image) {
        // Cache off: the item is live but its image is upstream. Wait for it by
        // name (updates start with the image) and ask for it by id.
        PendingImage* waiting = nullptr;
        switch (pending_.add(service, name, PendingSubscriber{&client, snapshot, view}, waiting)) {
            case PendingRequests::AddResult::kFirst:
                request_image_by_id(*item);
                waiting->last_request_ns = monotonic_ns();
                waiting->attempts = 1;
                return;
            case PendingRequests::AddResult::kJoined:
                return;
            case PendingRequests::AddResult::kLimitReached:
                return refuse_pending(client, service, name);
        }
    }
    if (item && !snapshot && item->status.stream_state() != wire::STREAM_CLOSED) {
        // Known item without a valid image: subscribe now, the image follows.
        add_subscription(client, *item, view);
        send_status(client, item->service_name, item->name, item->id, item->status);
        return request_image_by_id(*item);
    }
    PendingImage* pending = nullptr;
    switch (pending_.add(service, name, PendingSubscriber{&client, snapshot, view}, pending)) {
        case PendingRequests::AddResult::kFirst:
            switch (route_pending(*pending)) {
                case Route::kNoSuchService:
                    return close_unroutable({service, name});
                case Route::kWaiting:
                    // Asked before any source could answer: it waits for the
                    // service to appear (not closed by the first directory
                    // that lacks it, e.g. a distributor up before its publisher).
                    pending->recovering = true;
                    return tell_no_source_yet(client, service, name);
                case Route::kSent:
                    return;
            }
            return;
        case PendingRequests::AddResult::kJoined:
            if (pending->attempts == 0) tell_no_source_yet(client, service, name);
            return;
        case PendingRequests::AddResult::kLimitReached:
            return refuse_pending(client, service, name);
    }
}

// Nothing upstream can be asked yet (no distributor heard, or not every one
// has sent its directory): the subscriber hears so at once, and keeps waiting
// (open/suspect) for the image, however long its service takes to appear.
void Server::tell_no_source_yet(ClientSession& client, const std::string& service,
                                const std::string& name) {
    ++counters_.waiting_for_source;
    send_status(
        client, service, name, 0,
        make_status(wire::STREAM_OPEN, wire::DATA_SUSPECT, wire::STATUS_SOURCE_DOWN,
                    "no source for service " + service + " yet; the image follows when one is up"));
}

bool Server::add_subscription(ClientSession& client, const CachedItem& item,
                              const std::vector<uint32_t>& view) {
    if (!subscriptions_.add(item.id, &client, view)) return false;  // already open: re-image only
    client.subscriptions()[item.id] = view;
    return true;
}

void Server::on_unsubscribe(ClientSession& client, uint64_t item_id) {
    if (subscriptions_.remove(item_id, &client)) client.subscriptions().erase(item_id);
}

// ---- sending to clients --------------------------------------------------------------------

namespace {

std::span<const uint8_t> bytes_of(const std::string& frame) {
    return {reinterpret_cast<const uint8_t*>(frame.data()), frame.size()};
}

}  // namespace

// The item's image from the cache as a Refresh frame (only `view`'s fields when set).
std::string Server::image_frame(const CachedItem& item, const std::vector<uint32_t>& view,
                                bool solicited, bool snapshot) const {
    wire::Refresh refresh;
    refresh.set_item_id(item.id);
    refresh.set_item_seq(item.item_seq);
    refresh.set_clear_cache(true);
    refresh.set_solicited(solicited);
    refresh.set_service_id(item.service_id);
    refresh.set_service_name(item.service_name);
    refresh.set_item_name(item.name);
    *refresh.mutable_status() = item.status;
    // A snapshot is one image and then the stream is finished.
    if (snapshot) refresh.mutable_status()->set_stream_state(wire::STREAM_CLOSED);
    if (cache_.keeps_images()) {
        item.image.to_field_list(*refresh.mutable_fields(), view.empty() ? nullptr : &view);
    } else if (upstream_refresh_ && upstream_refresh_->item_id() == item.id) {
        // Cache off: the image is the one just received from upstream.
        proto::FieldImage image;
        image.assign(upstream_refresh_->fields());
        image.to_field_list(*refresh.mutable_fields(), view.empty() ? nullptr : &view);
    }
    return proto::encode_frame_string(FrameType::kRefresh, refresh);
}

std::string Server::status_frame(const CachedItem& item) const {
    wire::ItemStatus status;
    status.set_item_id(item.id);
    status.set_service_id(item.service_id);
    status.set_service_name(item.service_name);
    status.set_item_name(item.name);
    *status.mutable_status() = item.status;
    return proto::encode_frame_string(FrameType::kItemStatus, status);
}

// One update carrying the item's current values (from the cache), marked
// conflated: what a slow consumer gets instead of the updates it could not take.
std::string Server::conflated_frame(const CachedItem& item,
                                    const std::vector<uint32_t>& view) const {
    proto::UpdateView update;
    update.item_id = item.id;
    update.item_seq = item.item_seq;
    update.conflated = true;
    for (const auto& slot : item.image.slots()) update.fields.push_back(slot.entry());
    std::string frame;
    proto::append_update_frame(frame, update, view.empty() ? nullptr : &view);
    return frame;
}

void Server::send_image(ClientSession& client, const CachedItem& item,
                        const std::vector<uint32_t>& view, bool snapshot) {
    const std::string frame = image_frame(item, view, true, snapshot);
    if (snapshot) {
        client.deliver(bytes_of(frame));  // not an open item: nothing to conflate
    } else {
        client.deliver_item(item.id, ClientSession::Owed::kImage, bytes_of(frame));
    }
    ++counters_.refreshes_out;
}

void Server::fan_out_image(const CachedItem& item) {
    const auto* groups = subscriptions_.find(item.id);
    if (!groups) return;
    for (const auto& group : *groups) {
        const std::string frame = image_frame(item, group.view, false, false);
        for (ClientSession* client : group.clients) {
            client->deliver_item(item.id, ClientSession::Owed::kImage, bytes_of(frame));
        }
        counters_.refreshes_out += group.clients.size();
    }
}

void Server::fan_out_status(const CachedItem& item) {
    const auto* groups = subscriptions_.find(item.id);
    if (!groups) return;
    const std::string frame = status_frame(item);
    for (const auto& group : *groups) {
        for (ClientSession* client : group.clients) {
            client->deliver_item(item.id, ClientSession::Owed::kStatus, bytes_of(frame));
        }
        counters_.statuses_out += group.clients.size();
    }
}

// A conflating client's queue drained: send, per item it is owed, the current
// state from the cache (image, status, or one conflated update), as far as the
// queue allows; the rest waits for the next drain.
void Server::on_client_drained(ClientSession& client) {
    auto& owed = client.owed();
    for (auto it = owed.begin(); it != owed.end();) {
        const CachedItem* item = cache_.find(it->first);
        const auto subscription = client.subscriptions().find(it->first);
        if (!item || subscription == client.subscriptions().end()) {
            it = owed.erase(it);  // unsubscribed or gone meanwhile
            continue;
        }
        const auto& view = subscription->second;
        const bool current = item->has_image && item->status.data_state() == wire::DATA_OK;
        std::string frame;
        if (!current) {
            frame = status_frame(*item);
        } else if (it->second == ClientSession::Owed::kUpdate) {
            frame = conflated_frame(*item, view);
        } else {
            frame = image_frame(*item, view, false, false);
        }
        if (!client.connection().can_queue(frame.size())) return;  // more at the next drain
        client.connection().send_frame(bytes_of(frame));
        ++counters_.conflated_out;
        it = owed.erase(it);
    }
    client.end_conflation();
}

// The request cannot wait for its image: cache.max_pending_requests are waiting already.
void Server::refuse_pending(ClientSession& client, const std::string& service,
                            const std::string& name) {
    send_status(client, service, name, 0,
                make_status(wire::STREAM_CLOSED, wire::DATA_SUSPECT, wire::STATUS_LIMIT_REACHED,
                            "cache.max_pending_requests reached"));
}

void Server::send_status(ClientSession& client, const std::string& service, const std::string& name,
                         uint64_t item_id, const wire::Status& status) {
    wire::ItemStatus message;
    message.set_item_id(item_id);
    message.set_service_name(service);
    message.set_item_name(name);
    *message.mutable_status() = status;
    client.deliver(FrameType::kItemStatus, message);
    ++counters_.statuses_out;
}

// ---- backbone ------------------------------------------------------------------------------

void Server::on_backbone_message(uint16_t source, const proto::Frame& frame) {
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
    CachedItem* item = nullptr;
    switch (cache_.apply_update(update_, item)) {
        case ItemCache::Outcome::kApplied:
            break;
        case ItemCache::Outcome::kItemGap:
            ++counters_.item_gaps;
            fan_out_status(*item);
            request_image_by_id(*item);
            return;
        default:
            ++counters_.updates_dropped;
            return;
    }
    const auto* groups = subscriptions_.find(item->id);
    if (!groups) return;
    for (const auto& group : *groups) {
        std::span<const uint8_t> bytes = frame.whole;
        if (!group.view.empty()) {
            // One encoding per distinct view. Updates touching none of its fields are skipped.
            const bool touches_view = std::any_of(
                update_.fields.begin(), update_.fields.end(), [&](const proto::FieldEntry& f) {
                    return std::binary_search(group.view.begin(), group.view.end(), f.id);
                });
            if (!touches_view) continue;
            view_frame_.clear();
            proto::append_update_frame(view_frame_, update_, &group.view);
            bytes =
                std::span(reinterpret_cast<const uint8_t*>(view_frame_.data()), view_frame_.size());
        }
        for (ClientSession* client : group.clients) {
            client->deliver_item(item->id, ClientSession::Owed::kUpdate, bytes);
        }
        counters_.updates_out += group.clients.size();
    }
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
    const auto outcome = cache_.apply_refresh(refresh, item);
    if (outcome == ItemCache::Outcome::kLimitReached) {
        ++counters_.cache_full;
        wire::ItemStatus refused;
        refused.set_service_name(refresh.service_name());
        refused.set_item_name(refresh.item_name());
        *refused.mutable_status() =
            make_status(wire::STREAM_CLOSED, wire::DATA_SUSPECT, wire::STATUS_LIMIT_REACHED,
                        "cache.max_items reached on this server");
        return answer_pending(refused);
    }
    upstream_refresh_ = &refresh;  // where images come from while the cache is off
    if (item->has_image) recovering_.erase(item->id);  // applied, or an answer we already had
    if (outcome == ItemCache::Outcome::kApplied) fan_out_image(*item);
    serve_pending(*item);
    upstream_refresh_ = nullptr;
}

void Server::serve_pending(const CachedItem& item) {
    auto pending = pending_.take(item.service_name, item.name);
    if (!pending) return;
    for (const auto& waiting : pending->waiting) {
        if (!waiting.client->is_open()) continue;
        if (!waiting.client->entitled(item.service_name, item.name)) {  // revoked while it waited
            refuse_not_entitled(*waiting.client, item.service_name, item.name, item.id);
            continue;
        }
        if (!waiting.snapshot) add_subscription(*waiting.client, item, waiting.view);
        send_image(*waiting.client, item, waiting.view, waiting.snapshot);
    }
}

void Server::on_item_status(uint16_t source, const proto::Frame& frame) {
    wire::ItemStatus status;
    if (!status.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) {
        ++counters_.malformed_messages;
        return;
    }
    if (foreign(source, status.item_id())) return;
    ++counters_.statuses_in;
    CachedItem* item = nullptr;
    if (status.item_id() != 0 &&
        cache_.apply_status(status, item) == ItemCache::Outcome::kApplied) {
        fan_out_status(*item);
        if (status.status().stream_state() == wire::STREAM_CLOSED) drop_subscriptions(item->id);
    }
    answer_pending(status);
}

// A NOT_FOUND the distributor sent to this server alone: it closes the names
// waiting here; nothing else (no cached item, no other server) is touched.
void Server::on_control_answer(uint16_t, const proto::Frame& frame) {
    wire::ItemStatus status;
    if (!status.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size())) ||
        status.item_id() != 0 || status.status().code() != wire::STATUS_NOT_FOUND ||
        status.status().stream_state() != wire::STREAM_CLOSED) {
        ++counters_.malformed_messages;
        return;
    }
    ++counters_.not_found_in;
    answer_pending(status);
}

// Tells clients waiting for an image by name what upstream said instead.
void Server::answer_pending(const wire::ItemStatus& status) {
    if (status.status().stream_state() != wire::STREAM_CLOSED) {
        return;  // still open (e.g. recovering): keep waiting; retries tell them if it drags on
    }
    auto pending = pending_.take(status.service_name(), status.item_name());
    if (!pending) return;
    if (pending->recovering && status.status().code() == wire::STATUS_NOT_FOUND) {
        // The source has not re-registered since the reset: keep waiting (the
        // subscribers already hold a suspect status) for its refresh.
        return pending_.restore(std::move(*pending));
    }
    for (const auto& waiting : pending->waiting) {
        send_status(*waiting.client, status.service_name(), status.item_name(), status.item_id(),
                    status.status());
    }
}

void Server::drop_subscriptions(uint64_t item_id) {
    for (auto& group : subscriptions_.take(item_id)) {
        for (ClientSession* client : group.clients) client->subscriptions().erase(item_id);
    }
    recovering_.erase(item_id);
}

void Server::on_directory(uint16_t source, const proto::Frame& frame) {
    wire::Directory directory;
    if (!directory.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size()))) {
        ++counters_.malformed_messages;
        return;
    }
    sources_with_directory_.insert(source);
    for (const auto& info : directory.services()) {
        if (proto::service_source(info.service_id()) != source) {
            ++counters_.foreign_messages;
            continue;
        }
        const auto previous = directory_.find(info.service_id());
        const bool went_down =
            info.state() == wire::SERVICE_DOWN &&
            (previous == directory_.end() || previous->second.state() == wire::SERVICE_UP);
        if (previous == directory_.end() || previous->second.state() != info.state()) {
            log_->info("service {} ({}) is {}", info.name(), info.service_id(),
                       info.state() == wire::SERVICE_UP ? "up" : "down");
        }
        directory_[info.service_id()] = info;
        if (!went_down) continue;
        cache_.for_each([&](CachedItem& item) {
            if (item.service_id != info.service_id()) return;
            ItemCache::invalidate(item, wire::STATUS_SOURCE_DOWN,
                                  "service " + info.name() + " is down: its source went away");
            fan_out_status(item);
        });
    }
    // Names that were waiting for a directory naming their service.
    std::vector<PendingImage*> unsent;
    for (PendingImage* pending : pending_.all()) {
        if (pending->attempts == 0) unsent.push_back(pending);
    }
    route_pending(unsent);
}

void Server::mark_suspect_and_recover(CachedItem& item, wire::StatusCode code,
                                      const std::string& text) {
    ItemCache::invalidate(item, code, text);
    if (!subscriptions_.find(item.id)) return;
    fan_out_status(item);
    request_image_by_id(item);
}

void Server::on_backbone_unrecoverable(uint16_t source, uint64_t from, uint64_t to) {
    // Any item of that distributor may have missed updates in what could not be
    // repaired: they all go suspect, subscribed ones are re-imaged.
    const std::string text =
        "backbone packets " + std::to_string(from) + ".." + std::to_string(to - 1) + " lost";
    cache_.for_each([&](CachedItem& item) {
        if (proto::item_source(item.id) == source) {
            mark_suspect_and_recover(item, wire::STATUS_UNRECOVERABLE_LOSS, text);
        }
    });
}

void Server::on_source_reset(uint16_t source, uint64_t previous_epoch, uint64_t epoch) {
    std::erase_if(directory_,
                  [&](const auto& entry) { return proto::service_source(entry.first) == source; });
    sources_with_directory_.erase(source);
    std::erase_if(recovering_, [&](uint64_t id) { return proto::item_source(id) == source; });
    if (previous_epoch == 0) return;  // first heard
    // Item ids of the old epoch are void: tell subscribers, then wait for the
    // new source's images by name.
    const wire::Status reset =
        make_status(wire::STREAM_OPEN, wire::DATA_SUSPECT, wire::STATUS_SOURCE_RESET,
                    "the distributor restarted; waiting for a fresh image");
    std::vector<uint64_t> void_ids;
    cache_.for_each([&](CachedItem& item) {
        if (proto::item_source(item.id) != source) return;
        void_ids.push_back(item.id);
        item.status = reset;
        fan_out_status(item);
        for (auto& group : subscriptions_.take(item.id)) {
            for (ClientSession* client : group.clients) {
                client->subscriptions().erase(item.id);
                PendingImage* pending = nullptr;
                pending_.add(item.service_name, item.name,
                             PendingSubscriber{client, false, group.view}, pending);
                if (pending) {
                    pending->recovering = true;
                } else {
                    send_status(*client, item.service_name, item.name, item.id,
                                make_status(wire::STREAM_CLOSED, wire::DATA_SUSPECT,
                                            wire::STATUS_LIMIT_REACHED,
                                            "cache.max_pending_requests reached during recovery"));
                }
            }
        }
    });
    for (uint64_t id : void_ids) cache_.erase(id);
    for (PendingImage* pending : pending_.all()) pending->last_request_ns = 0;
    log_->warn(
        "distributor {} reset: epoch {:016x} -> {:016x}; {} item names waiting for new images",
        source, previous_epoch, epoch, pending_.size());
}

void Server::on_source_silent(uint16_t source, bool silent) {
    if (silent) {
        cache_.for_each([&](CachedItem& item) {
            if (proto::item_source(item.id) != source) return;
            ItemCache::invalidate(item, wire::STATUS_SOURCE_DOWN,
                                  "no packets from the distributor for backbone.source_silent_ms");
            fan_out_status(item);
        });
        return;
    }
    // Heard again: nothing says what was missed while silent, so subscribed items
    // get fresh images.
    for (uint64_t id : subscriptions_.item_ids()) {
        CachedItem* item = cache_.find(id);
        if (item && proto::item_source(id) == source) request_image_by_id(*item);
    }
}

void Server::on_control_ready(uint16_t source) {
    backbone_.query_directory(source);  // pending names are routed when its directory arrives
}

void Server::request_image_by_id(CachedItem& item) {
    recovering_.insert(item.id);
    wire::ImageRequest request;
    request.set_item_id(item.id);
    request.set_service_id(item.service_id);
    item.image_requested = backbone_.request_image(proto::item_source(item.id), request);
}

// The distributor whose directory lists `service`.
std::optional<uint16_t> Server::service_source(const std::string& service) const {
    for (const auto& [id, info] : directory_) {
        if (info.name() == service) return proto::service_source(id);
    }
    return std::nullopt;
}

// Sends the image request for a name to the distributor that has its service.
// kNoSuchService when every distributor heard has sent its directory and none
// lists the service (a recovering subscription keeps waiting instead).
Server::Route Server::route_pending(PendingImage& pending) {
    if (const auto source = service_source(pending.service_name)) {
        wire::ImageRequest request;
        request.set_service_name(pending.service_name);
        request.set_item_name(pending.item_name);
        if (backbone_.request_image(*source, request)) {
            pending.last_request_ns = monotonic_ns();
            ++pending.attempts;
        }
        return Route::kSent;
    }
    const auto heard = backbone_.sources();
    const bool all_known =
        !heard.empty() && std::all_of(heard.begin(), heard.end(), [&](uint16_t s) {
            return sources_with_directory_.contains(s);
        });
    return all_known && !pending.recovering ? Route::kNoSuchService : Route::kWaiting;
}

void Server::route_pending(const std::vector<PendingImage*>& entries) {
    std::vector<std::pair<std::string, std::string>> unroutable;
    for (PendingImage* pending : entries) {
        if (route_pending(*pending) == Route::kNoSuchService) {
            unroutable.emplace_back(pending->service_name, pending->item_name);
        }
    }
    for (const auto& name : unroutable) close_unroutable(name);
}

void Server::close_unroutable(const std::pair<std::string, std::string>& name) {
    wire::ItemStatus status;
    status.set_service_name(name.first);
    status.set_item_name(name.second);
    *status.mutable_status() = make_status(wire::STREAM_CLOSED, wire::DATA_SUSPECT,
                                           wire::STATUS_NOT_FOUND, "no such service");
    answer_pending(status);
}

// ---- housekeeping --------------------------------------------------------------------------

void Server::on_housekeeping() {
    const int64_t now = monotonic_ns();
    check_client_timeouts(now);
    retry_image_requests(now);
    for (uint16_t source : backbone_.sources()) {
        if (backbone_.control_ready(source) && !sources_with_directory_.contains(source)) {
            backbone_.query_directory(source);
        }
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
        const int64_t silent_ms = (now - client->connection().last_input_ns()) / 1'000'000;
        const int64_t open_ms = (now - client->connection().ready_ns()) / 1'000'000;
        if (client->connection().tls_handshaking())
            continue;  // its own deadline: tls.handshake_timeout_ms
        if (!client->logged_in() && open_ms >= config_.clients_login_timeout_ms) {
            client->connection().close(CloseReason::kNotLoggedIn,
                                       "no login within clients.login_timeout_ms of connecting");
        } else if (config_.clients_idle_timeout_ms > 0 &&
                   silent_ms >= config_.clients_idle_timeout_ms) {
            client->connection().close(CloseReason::kIdleTimeout,
                                       "silent for " + std::to_string(silent_ms) + " ms");
        }
    }
}

void Server::retry_image_requests(int64_t now) {
    const int64_t timeout = int64_t{config_.backbone_image_request_timeout_ms} * 1'000'000;
    const auto overdue = pending_.overdue(now, timeout);
    for (PendingImage* pending : overdue) {
        if (pending->attempts >= 2 && !pending->told_recovering) {
            pending->told_recovering = true;
            const auto status =
                make_status(wire::STREAM_OPEN, wire::DATA_SUSPECT, wire::STATUS_RECOVERING,
                            "no image from upstream yet; still asking");
            for (const auto& waiting : pending->waiting) {
                send_status(*waiting.client, pending->service_name, pending->item_name, 0, status);
            }
        }
    }
    route_pending(overdue);
    if (now - last_recovery_request_ns_ < timeout) return;
    last_recovery_request_ns_ = now;
    for (uint64_t id : recovering_) {
        if (CachedItem* item = cache_.find(id)) {
            wire::ImageRequest request;
            request.set_item_id(item->id);
            request.set_service_id(item->service_id);
            backbone_.request_image(proto::item_source(id), request);
        }
    }
}

// Every counter of the server, declared once: the admin endpoint's /metrics and
// the counters log line both read this registry.
void Server::register_metrics() {
    auto& m = metrics_;
    const auto& b = backbone_.counters();
    const auto& c = counters_;
    const auto recovery = [this] { return backbone_.recovery_counters(); };
    const auto clients = [this](auto read) {
        double sum = 0;
        for (const auto& [id, client] : clients_) {
            if (client->is_open()) sum += static_cast<double>(read(*client));
        }
        return sum;
    };
    m.gauge("clients", "Client connections open",
            [clients] { return clients([](auto&) { return 1; }); });
    m.gauge("subscriptions", "Open item subscriptions over all clients", [clients] {
        return clients([](ClientSession& s) { return s.subscriptions().size(); });
    });
    m.gauge("items", "Items in the cache", [this] { return cache_.size(); });
    m.gauge("subscribed_items", "Items with at least one subscriber",
            [this] { return subscriptions_.item_count(); });
    m.gauge("pending", "Item names waiting for an image from upstream",
            [this] { return pending_.size(); });
    m.counter("packets_total", "Backbone datagrams received", [&b] { return b.packets_received; });
    m.counter("bytes_in_total", "Backbone bytes received", [&b] { return b.bytes_received; });
    m.counter("messages_total", "Backbone messages delivered in order",
              [&b] { return b.messages_received; });
    m.counter("refreshes_in_total", "Refreshes received", [&c] { return c.refreshes_in; });
    m.counter("updates_in_total", "Updates received", [&c] { return c.updates_in; });
    m.counter("statuses_in_total", "Item statuses received", [&c] { return c.statuses_in; });
    m.counter("waiting_for_source_total",
              "Item requests answered open/suspect: no source for their service yet",
              [&c] { return c.waiting_for_source; });
    m.counter("not_found_in_total", "NOT_FOUND answers the distributor sent to this server alone",
              [&c] { return c.not_found_in; });
    m.counter("heartbeats_total", "Backbone heartbeats received",
              [&b] { return b.heartbeats_received; });
    m.counter("malformed_packets_total", "Backbone datagrams dropped as malformed",
              [&b] { return b.malformed_packets; });
    m.counter("bad_signatures_total", "Backbone datagrams unsigned or forged, dropped",
              [&b] { return b.bad_signatures; });
    m.counter("stalls_total",
              "Times this server found it had not run for a while (paused): sources not blamed",
              [&b] { return b.stalls; });
    m.counter("stale_epochs_total",
              "Backbone datagrams of an older epoch than the distributor's current one, dropped",
              [&b] { return b.stale_epochs; });
    m.counter("malformed_messages_total", "Messages dropped as malformed",
              [&c] { return c.malformed_messages; });
    m.counter("foreign_messages_total", "Messages for another distributor's ids, dropped",
              [&c] { return c.foreign_messages; });
    m.counter("foreign_sources_total", "Packets from distributors beyond backbone.max_sources",
              [&b] { return b.foreign_sources; });
    m.counter("item_gaps_total", "Updates that skipped an item's sequence",
              [&c] { return c.item_gaps; });
    m.counter("dropped_total", "Updates dropped: stale, no image or unknown item",
              [&c] { return c.updates_dropped; });
    m.counter("kernel_drops_total", "Datagrams the kernel dropped on the backbone sockets",
              [this] { return backbone_.kernel_drops(); });
    m.counter("injected_drops_total", "Packets dropped by testing.loss",
              [&b] { return b.injected_drops; });
    m.counter("gaps_total", "Backbone gaps detected", [recovery] { return recovery().gaps; });
    m.counter("missing_total", "Backbone packets found missing",
              [recovery] { return recovery().missing_detected; });
    m.counter("repaired_total", "Missing packets that arrived later",
              [recovery] { return recovery().repaired; });
    m.counter("repairs_received_total", "Datagrams flagged as retransmissions",
              [&b] { return b.repairs_received; });
    m.counter("duplicates_total", "Backbone packets received twice",
              [recovery] { return recovery().duplicates; });
    m.counter("out_of_order_total", "Packets held after a gap",
              [recovery] { return recovery().out_of_order; });
    m.counter("naks_total", "NAK messages sent", [recovery] { return recovery().naks_sent; });
    m.counter("nak_sequences_total", "Sequences asked for in NAKs",
              [recovery] { return recovery().nak_sequences; });
    m.counter("unrecoverable_total", "Backbone packets given up",
              [recovery] { return recovery().unrecoverable; });
    m.counter("epoch_changes_total", "Distributor restarts seen",
              [recovery] { return recovery().epoch_changes; });
    m.counter("jumps_refused_total",
              "Packets or heartbeats too far ahead in sequence, not believed (dropped)",
              [recovery] { return recovery().jumps_refused; });
    m.counter("jumps_taken_total", "Far sequence jumps confirmed and taken",
              [recovery] { return recovery().jumps_taken; });
    m.gauge("repair_p50_seconds", "Median repair time (loss seen to repair received)", [this] {
        return static_cast<double>(backbone_.repair_times().percentile_ns(0.5)) / 1e9;
    });
    m.gauge("repair_p99_seconds", "99th percentile repair time", [this] {
        return static_cast<double>(backbone_.repair_times().percentile_ns(0.99)) / 1e9;
    });
    m.gauge("rtt_p50_seconds", "Median round trip to the distributors", [this] {
        return static_cast<double>(backbone_.round_trips().percentile_ns(0.5)) / 1e9;
    });
    m.counter("refreshes_out_total", "Refreshes sent to clients", [&c] { return c.refreshes_out; });
    m.counter("updates_out_total", "Updates sent to clients", [&c] { return c.updates_out; });
    m.counter("statuses_out_total", "Statuses sent to clients", [&c] { return c.statuses_out; });
    m.counter("bytes_out_total", "Bytes written to clients", [&c, clients] {
        return static_cast<double>(c.closed_bytes_out) +
               clients([](ClientSession& s) { return s.connection().bytes_out(); });
    });
    m.counter("writes_total", "Socket writes to clients", [&c, clients] {
        return static_cast<double>(c.closed_writes) +
               clients([](ClientSession& s) { return s.connection().writes(); });
    });
    m.counter("flush_rounds_total", "Flush rounds (loop iterations or timer ticks with output)",
              [this] { return flusher_.flush_rounds(); });
    m.gauge("queued_bytes", "Output queued over all clients", [clients] {
        return clients([](ClientSession& s) { return s.connection().queued_bytes(); });
    });
    m.gauge("queued_bytes_max", "Largest output queue of one client", [this] {
        size_t most = 0;
        for (const auto& [id, client] : clients_)
            most = std::max(most, client->connection().queued_bytes());
        return static_cast<double>(most);
    });
    m.gauge("pool_borrowed", "Bytes borrowed from output.pool_bytes",
            [this] { return output_pool_.borrowed(); });
    m.gauge("pool_peak", "Most bytes ever borrowed from the pool",
            [this] { return output_pool_.peak_borrowed(); });
    m.counter("slow_consumers_total", "Clients disconnected as slow consumers",
              [&c] { return c.slow_consumers; });
    m.gauge("conflating", "Clients conflating now",
            [clients] { return clients([](ClientSession& s) { return s.conflating() ? 1 : 0; }); });
    m.counter("conflation_episodes_total", "Times a client started conflating", [&c, clients] {
        return static_cast<double>(c.conflation_episodes) +
               clients([](ClientSession& s) { return s.conflation_episodes(); });
    });
    m.counter("conflated_out_total", "Messages sent from conflation backlogs",
              [&c] { return c.conflated_out; });
    m.counter("refused_total", "Connections refused (limit or shutdown)",
              [&c] { return c.clients_refused; });
    auth_.register_metrics(m);
    m.counter("not_entitled_total", "Item requests refused: not entitled",
              [&c] { return c.not_entitled; });
    m.counter("entitlement_revocations_total", "Subscriptions closed not entitled by a reload",
              [&c] { return c.entitlement_revocations; });
    m.counter("users_removed_total", "Clients closed because a reload removed their user",
              [&c] { return c.users_removed; });
    listeners_.register_metrics(m, [clients] {
        return clients([](ClientSession& s) { return s.connection().is_tls() ? 1 : 0; });
    });
    for (size_t i = 0; i < kCloseReasonCount; ++i) {
        const std::string reason(close_reason_name(static_cast<CloseReason>(i)));
        m.counter("close_" + reason + "_total", "Client connections closed: " + reason,
                  [&c, i] { return c.closes[i]; });
    }
}

void Server::log_counters(spdlog::level::level_enum level) {
    log_->log(level, "{}", metrics_.log_line());
}

// Healthy while serving and at least one distributor is heard.
std::pair<bool, std::string> Server::health() const {
    if (shutting_down_) return {false, "shutting down"};
    const auto sources = backbone_.sources();
    if (sources.empty()) return {false, "no distributor heard on the backbone yet"};
    for (uint16_t source : sources) {
        if (!backbone_.silent(source)) return {true, "ok"};
    }
    return {false, "every distributor is silent"};
}

std::string Server::stats_json() const {
    using proto::json_escape;
    std::string out = "{\"server_id\":\"" + json_escape(server_id_) + "\",\"clients\":[";
    bool first = true;
    for (const auto& [id, client] : clients_) {
        if (!client->is_open()) continue;
        const TcpConnection& c = client->connection();
        out += fmt::format(
            "{}{{\"id\":{},\"peer\":\"{}\",\"user\":\"{}\",\"application\":\"{}\","
            "\"subscriptions\":{},\"queued_bytes\":{},\"messages_out\":{},\"bytes_out\":{},"
            "\"bytes_in\":{},\"messages_out_per_s\":{:.1f},\"bytes_out_per_s\":{:.1f},"
            "\"conflating\":{}}}",
            first ? "" : ",", id, json_escape(c.peer()), json_escape(client->user()),
            json_escape(client->application_id()), client->subscriptions().size(), c.queued_bytes(),
            client->messages_out(), c.bytes_out(), c.bytes_in(), client->rates().messages_out_per_s,
            client->rates().bytes_out_per_s, client->conflating() ? "true" : "false");
        first = false;
    }
    out += "],\"recent_closes\":[";
    first = true;
    for (const auto& closed : recent_closes_) {
        out += fmt::format(
            "{}{{\"id\":{},\"peer\":\"{}\",\"user\":\"{}\",\"reason\":\"{}\","
            "\"text\":\"{}\",\"at_ns\":{}}}",
            first ? "" : ",", closed.id, json_escape(closed.peer), json_escape(closed.user),
            closed.reason, json_escape(closed.text), closed.at_ns);
        first = false;
    }
    return out + "],\"metrics\":" + metrics_.json() + "}";
}

config::ReloadResult Server::reload(const ServerConfig& fresh,
                                    const std::vector<config::ConfigChange>& changes) {
    // Limits checked when a connection or request arrives apply from now on.
    std::vector<std::string> reloadable{"clients.max_connections", "clients.max_items_per_request",
                                        "clients.max_subscriptions"};
    for (auto& key : reloadable_auth_keys(config_, fresh)) reloadable.push_back(std::move(key));
    config::ReloadResult result;
    result.applied = server_schema().apply_changes(changes, reloadable, fresh, config_);
    // The users file is re-read on every SIGHUP, changed path or not.
    if (auth_.reload(auth_settings(fresh))) enforce_access();
    // Certificate files are re-read on every SIGHUP, changed names or not.
    if (listeners_.reload_tls(tls_server_settings(fresh), fresh.tls_handshake_timeout_ms)) {
        auto tls_keys = server_schema().apply_changes(changes, kTlsReloadableKeys, fresh, config_);
        result.applied.insert(result.applied.end(), tls_keys.begin(), tls_keys.end());
    } else {
        result.failed = config::Schema<ServerConfig>::changed_among(changes, kTlsReloadableKeys);
    }
    return result;
}

void Server::shutdown(const std::string& why) {
    if (shutting_down_) return finish_shutdown("second " + why);
    shutting_down_ = true;
    listeners_.disable();
    log_->info("shutting down on {}: telling {} client(s), up to {} ms to flush", why,
               clients_.size(), config_.shutdown_grace_ms);
    for (auto& [id, client] : clients_) {
        if (client->is_open())
            client->connection().close_after_flush(CloseReason::kShutdown, "server shutting down");
    }
    grace_timer_.start_once(std::chrono::milliseconds(config_.shutdown_grace_ms));
    reaper_.fire();  // nobody connected: done at once
}

// Clients still writing when the grace period ends are cut off.
void Server::finish_shutdown(const std::string& why) {
    if (stopped_) return;
    stopped_ = true;
    size_t cut = 0;
    for (auto& [id, client] : clients_) {
        if (!client->is_open()) continue;
        ++cut;
        client->connection().close(CloseReason::kShutdown, "server shutting down");
    }
    log_->info("shutdown complete ({}); {} client(s) cut off with output unsent", why, cut);
    log_counters(spdlog::level::info);
    loop_.stop();
}

}  // namespace mdcast::server
