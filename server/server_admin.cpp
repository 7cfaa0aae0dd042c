// The server's operator endpoints: /info (build, process, effective configuration,
// counts), /items (one cached item or a summary of all), and the token-protected
// actions kick (close one client), drain (lame duck) and reload (as SIGHUP, answered).
#include "common/clock.h"
#include "common/daemon/admin_query.h"
#include "common/daemon/daemon_main.h"
#include "common/daemon/process_metrics.h"
#include "common/daemon/reload_status.h"
#include "common/logging.h"
#include "proto/field_image.h"  // before field_values.h, whose `wire` alias would hide its own
#include "proto/field_values.h"
#include "proto/source_ids.h"
#include "server/server.h"

namespace mdcast::server {

using proto::json_escape;

namespace {

constexpr size_t kDefaultItemList = 100;
constexpr int64_t kDrainTickMs = 100;
constexpr uint64_t kMaxDrainSeconds = 86400;

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
        "\"keys_waiting_for_restart\":{},\"redundancy\":{},\"config\":{}}}",
        json_escape(server_id_), config_.instance, process_info_json(), healthy ? "true" : "false",
        json_escape(health_text), drain_.active ? "true" : "false", connections, cache_.size(),
        fanout_.subscribed_item_count(), subscriptions, upstream_->sources().size(),
        json_string_list(keys_waiting_for_restart()), redundancy_json(),
        config_json(server_schema().json_values(config_)));
}

// GET /items?name=N[&service=S]: one item with its fields, sequence, state and
// subscribers. Without a name: up to `limit` (100; at most admin.max_items_per_answer)
// items in brief.
AdminHttp::Reply Server::items_reply(const AdminHttp::Query& query) {
    AdminHttp::Reply refusal;
    if (!known_parameters(query, {"name", "service", "limit"}, refusal)) return refusal;
    const auto limit = query_number(
        query,
        {"limit", std::min<uint64_t>(kDefaultItemList, config_.admin_max_items_per_answer), 1,
         config_.admin_max_items_per_answer},
        refusal);
    if (!limit) return refusal;
    const auto subscriber_ids = [this](uint64_t item_id) {
        return fanout_.subscriber_ids(item_id);
    };
    const auto summary = [&](const CachedItem& item) {
        return fmt::format(
            "\"service\":\"{}\",\"name\":\"{}\",\"id\":{},\"sequence\":{},\"stream_state\":\"{}\","
            "\"data_state\":\"{}\",\"status_text\":\"{}\",\"has_image\":{},\"subscribers\":{},"
            "\"served_by\":{}",
            json_escape(item.service_name), json_escape(item.name), item.id, item.item_seq,
            wire::StreamState_Name(item.status.stream_state()),
            wire::DataState_Name(item.status.data_state()), json_escape(item.status.text()),
            item.has_image ? "true" : "false", subscriber_ids(item.id).size(),
            proto::item_source(item.fed_by ? item.fed_by->id : item.id));
    };
    const auto name = query.find("name");
    if (name == query.end()) {
        std::string out = "{\"count\":" + std::to_string(cache_.size()) + ",\"items\":[";
        size_t listed = 0;
        cache_.for_each([&](CachedItem& item) {
            if (listed >= *limit) return;
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
    std::string ids = "[";
    for (uint64_t id : subscriber_ids(found->id))
        ids += (ids.size() > 1 ? "," : "") + std::to_string(id);
    return {200, "{" + summary(*found) + ",\"subscriber_ids\":" + ids +
                     "],\"fields\":" + fields_json(*found) + "}"};
}

// The WebSocket port's dictionary, or clients.ws_dictionary_file read once; null
// (fields by id only) when it does not load, said once in the log.
const proto::FieldDictionary* Server::field_names() {
    if (json_) return &json_->dictionary();
    if (!field_names_read_) {
        field_names_read_ = true;
        try {
            field_names_ = proto::FieldDictionary::load_file(config_.clients_ws_dictionary_file);
        } catch (const std::exception& error) {
            log_->warn("/items shows field ids without names (clients.ws_dictionary_file): {}",
                       error.what());
        }
    }
    return field_names_ ? &*field_names_ : nullptr;
}

// [{"id":22,"name":"BID","type":"DECIMAL","value":101.25},...]: each value JSON of
// its type; name and type null for a field the dictionary does not define.
std::string Server::fields_json(const CachedItem& item) {
    wire::FieldList fields;
    if (item.has_image) item.image.to_field_list(fields);
    const proto::FieldDictionary* names = field_names();
    std::string out = "[";
    for (const auto& field : fields.fields()) {
        const proto::FieldDefinition* known = names ? names->find(field.id()) : nullptr;
        out += fmt::format(
            "{}{{\"id\":{},\"name\":{},\"type\":{},\"value\":{}}}", out.size() > 1 ? "," : "",
            field.id(), known ? "\"" + json_escape(known->name) + "\"" : "null",
            known ? fmt::format("\"{}\"", proto::field_type_name(known->type)) : "null",
            proto::format_value_json(field));
    }
    return out + "]";
}

AdminHttp::Reply Server::admin_action(const std::string& action, const AdminHttp::Query& query) {
    if (action == "kick") return kick(query);
    if (action == "drain") return start_drain(query);
    AdminHttp::Reply refusal;
    if (!known_parameters(query, {}, refusal)) return refusal;
    // The same path as SIGHUP (systemctl reload), run now: the answer says what it did.
    log_->info("reload asked for on the admin endpoint");
    return reload_reply();
}

AdminHttp::Reply Server::kick(const AdminHttp::Query& query) {
    AdminHttp::Reply refusal;
    if (!known_parameters(query, {"id"}, refusal)) return refusal;
    const auto wanted = query_number(query, {"id", 0, 1, UINT64_MAX}, refusal);
    if (!wanted) return refusal;
    const uint64_t id = *wanted;
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
    AdminHttp::Reply refusal;
    if (!known_parameters(query, {"seconds"}, refusal)) return refusal;
    const auto asked = query_number(query, {"seconds", 10, 0, kMaxDrainSeconds}, refusal);
    if (!asked) return refusal;
    if (clients_.shutting_down() || drain_.active)
        return {409, "already draining or shutting down\n"};
    const uint64_t seconds = *asked;
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
