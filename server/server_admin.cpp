// The server's operator endpoints: /info (build, process, effective configuration,
// counts), /items (one cached item or a summary of all), and the token-protected
// actions kick (close one client), drain (lame duck) and reload (SIGHUP).
#include <csignal>

#include "common/clock.h"
#include "common/daemon/daemon_main.h"
#include "common/daemon/process_metrics.h"
#include "common/logging.h"
#include "proto/field_image.h"  // before field_values.h, whose `wire` alias would hide its own
#include "proto/field_values.h"
#include "server/server.h"

namespace mdcast::server {

using proto::json_escape;

namespace {

constexpr size_t kDefaultItemList = 100;
constexpr int64_t kDrainTickMs = 100;

size_t parse_count(const AdminHttp::Query& query, const std::string& key, size_t fallback) {
    const auto found = query.find(key);
    if (found == query.end()) return fallback;
    try {
        return static_cast<size_t>(std::stoull(found->second));
    } catch (const std::exception&) {
        return fallback;
    }
}

}  // namespace

AdminHttp::Handlers Server::admin_handlers() {
    return {[this] { return health(); }, [this] { return stats_json(); },
            [this] { return info_json(); },
            [this](const AdminHttp::Query& query) { return items_reply(query); },
            [this](const std::string& action, const AdminHttp::Query& query) {
                return admin_action(action, query);
            }};
}

std::string Server::info_json() const {
    size_t connections = 0, subscriptions = 0;
    for (const auto& [id, client] : clients_) {
        if (!client->is_open()) continue;
        ++connections;
        subscriptions += fanout_.subscription_count(*client);
    }
    const auto [healthy, health_text] = health();
    return fmt::format(
        "{{\"daemon\":\"mdcast-server\",\"id\":\"{}\",\"instance\":{},{},\"healthy\":{},"
        "\"health\":\"{}\",\"draining\":{},\"connections\":{},\"items\":{},"
        "\"subscribed_items\":{},\"subscriptions\":{},\"sources\":{},"
        "\"keys_waiting_for_restart\":{},\"config\":{}}}",
        json_escape(server_id_), config_.instance, process_info_json(), healthy ? "true" : "false",
        json_escape(health_text), drain_.active ? "true" : "false", connections, cache_.size(),
        fanout_.subscribed_item_count(), subscriptions, backbone_.sources().size(),
        json_string_list(keys_waiting_for_restart()), config_json(server_schema().values(config_)));
}

// GET /items?name=N[&service=S]: one item with its fields, sequence, state and
// subscribers. Without a name: up to `limit` (100) items in brief.
AdminHttp::Reply Server::items_reply(const AdminHttp::Query& query) {
    const auto subscriber_ids = [this](uint64_t item_id) {
        return fanout_.subscriber_ids(item_id);
    };
    const auto summary = [&](const CachedItem& item) {
        return fmt::format(
            "\"service\":\"{}\",\"name\":\"{}\",\"id\":{},\"sequence\":{},\"stream_state\":\"{}\","
            "\"data_state\":\"{}\",\"status_text\":\"{}\",\"has_image\":{},\"subscribers\":{}",
            json_escape(item.service_name), json_escape(item.name), item.id, item.item_seq,
            wire::StreamState_Name(item.status.stream_state()),
            wire::DataState_Name(item.status.data_state()), json_escape(item.status.text()),
            item.has_image ? "true" : "false", subscriber_ids(item.id).size());
    };
    const auto name = query.find("name");
    if (name == query.end()) {
        const size_t limit = parse_count(query, "limit", kDefaultItemList);
        std::string out = "{\"count\":" + std::to_string(cache_.size()) + ",\"items\":[";
        size_t listed = 0;
        cache_.for_each([&](CachedItem& item) {
            if (listed >= limit) return;
            out += (listed++ ? ",{" : "{") + summary(item) + "}";
        });
        return {200, out + "]}"};
    }
    const auto service = query.find("service");
    CachedItem* found = nullptr;
    cache_.for_each([&](CachedItem& item) {
        if (!found && item.name == name->second &&
            (service == query.end() || item.service_name == service->second))
            found = &item;
    });
    if (!found) return {404, "no cached item named '" + name->second + "'\n"};
    wire::FieldList fields;
    if (found->has_image) found->image.to_field_list(fields);
    std::string field_json = "[";
    for (const auto& field : fields.fields()) {
        field_json += fmt::format("{}{{\"id\":{},\"value\":{}}}", field_json.size() > 1 ? "," : "",
                                  field.id(), proto::format_value_json(field));
    }
    std::string ids = "[";
    for (uint64_t id : subscriber_ids(found->id))
        ids += (ids.size() > 1 ? "," : "") + std::to_string(id);
    return {200, "{" + summary(*found) + ",\"subscriber_ids\":" + ids +
                     "],\"fields\":" + field_json + "]}"};
}

AdminHttp::Reply Server::admin_action(const std::string& action, const AdminHttp::Query& query) {
    if (action == "kick") return kick(query);
    if (action == "drain") return start_drain(query);
    // The same path as SIGHUP (systemctl reload): re-read, apply, log each change.
    log_->info("reload asked for on the admin endpoint");
    std::raise(SIGHUP);
    return {200, "{\"reload\":\"started\",\"see\":\"the log for each change\"}"};
}

AdminHttp::Reply Server::kick(const AdminHttp::Query& query) {
    const uint64_t id = parse_count(query, "id", 0);
    ClientSession* found = clients_.find(id);
    if (!found || !found->is_open())
        return {404, "no open client with id " + std::to_string(id) + "\n"};
    ClientSession& client = *found;
    log_->info("client {} ({}, user '{}') kicked by an operator", id, client.connection().peer(),
               log::escaped(client.user()));
    client.connection().close_after_flush(CloseReason::kKicked, "closed by an operator");
    return {200, fmt::format("{{\"kicked\":{}}}", id)};
}

// POST /drain?seconds=S: stop accepting, then close the open clients with `shutdown`
// spread evenly over S seconds (the SDK fails over to its next server at once, so the
// other instances take them a few at a time), then shut down as on SIGTERM.
AdminHttp::Reply Server::start_drain(const AdminHttp::Query& query) {
    if (clients_.shutting_down() || drain_.active)
        return {409, "already draining or shutting down\n"};
    const size_t seconds = parse_count(query, "seconds", 10);
    drain_.active = true;
    drain_.start_ns = monotonic_ns();
    drain_.duration_ns = static_cast<int64_t>(seconds) * 1'000'000'000;
    drain_.initial = clients_.open_count();
    listeners_.disable();
    if (ws_listeners_) ws_listeners_->disable();
    log_->info("draining on the admin endpoint: {} client(s) move away over {} s, then stop",
               drain_.initial, seconds);
    drain_timer_.start_periodic(std::chrono::milliseconds(kDrainTickMs));
    on_drain_tick();
    return {200, fmt::format("{{\"draining\":true,\"clients\":{},\"seconds\":{}}}", drain_.initial,
                             seconds)};
}

void Server::on_drain_tick() {
    const int64_t elapsed = monotonic_ns() - drain_.start_ns;
    const double done =
        drain_.duration_ns > 0
            ? std::min(1.0, static_cast<double>(elapsed) / static_cast<double>(drain_.duration_ns))
            : 1.0;
    const auto target = static_cast<size_t>(done * static_cast<double>(drain_.initial) + 0.999);
    for (auto& [id, client] : clients_) {
        if (drain_.moved.size() >= target) break;
        if (!client->is_open() || drain_.moved.count(id)) continue;
        drain_.moved.insert(id);
        client->connection().close_after_flush(CloseReason::kShutdown,
                                               "server draining: reconnect to another instance");
    }
    if (done >= 1.0) {
        drain_timer_.stop();
        shutdown("drain");
    }
}

}  // namespace mdcast::server
