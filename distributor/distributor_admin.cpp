// The distributor's metrics and admin endpoint: every counter registered once
// (the rooms and the backbone register their own), /stats as JSON, /info and
// the admin actions.

#include "common/daemon/daemon_keys.h"
#include "common/daemon/daemon_main.h"
#include "common/daemon/process_metrics.h"
#include "common/daemon/reload_status.h"
#include "distributor/distributor.h"
#include "proto/field_values.h"

namespace mdcast::distributor {

namespace {

constexpr size_t kStatsItems = 1000;  // items listed in /stats

}  // namespace

// Every counter of the distributor, declared once: /metrics and the counters
// log line both read this registry.
void Distributor::register_metrics() {
    auto& m = metrics_;
    register_post_metrics();
    register_group_metrics();
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
    m.counter("publisher_takeovers_total",
              "Services taken over by a publisher's proven reconnect (takeover token or login)",
              [&p] { return p.takeovers; });
    m.counter("publisher_takeovers_refused_total",
              "Claims on a service another connection owns, refused for want of proof",
              [&p] { return p.takeovers_refused; });
    m.counter("trades_marked_total",
              "Updates marked trades by their service's trades.fields (the publisher had not)",
              [&p] { return p.trades_marked; });
    m.counter("invalid_content_total",
              "Publisher messages refused alone for invalid content (not UTF-8); connection kept",
              [&p] { return p.invalid_content; });
    m.counter("busy_poll_passes_total",
              "Loop passes made without sleeping because of distributor.busy_poll_us",
              [this] { return spinner_.passes(); });
    hop_probe_.register_metrics(m, "update");
    backbone_->register_metrics(m);
    leases_.register_metrics(m);
    m.counter("refused_connections_total", "Publisher connections refused",
              [this] { return sessions_.refused(); });
    auth_.register_metrics(m);
    register_reload_metrics(m);
}

// The line is built only when it is logged: building it reads every metric and the
// process (/proc), a stall of the loop every 10 s that nobody sees at info level.
void Distributor::log_counters(spdlog::level::level_enum level) {
    if (log_->should_log(level)) log_->log(level, "{}", metrics_.log_line());
}

// Publishers, services (with their owner and state) and items (up to
// kStatsItems of them; `item_count` says how many there are).
std::string Distributor::stats_json() const {
    using proto::json_escape;
    std::string out =
        "{\"epoch\":\"" + fmt::format("{:016x}", backbone_->epoch()) + "\",\"publishers\":[";
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

AdminHttp::Handlers Distributor::admin_handlers() {
    AdminHttp::Handlers handlers;
    handlers.health = [] { return std::pair{true, std::string("ok")}; };
    handlers.stats = [this] { return stats_json(); };
    handlers.info = [this] {
        const size_t publishers = sessions_.open_count();
        return fmt::format(
            "{{\"daemon\":\"mdcast-distributor\",\"distributor_id\":{},\"epoch\":\"{:016x}\",{},"
            "\"publishers\":{},\"services\":{},\"items\":{},\"standby_groups\":{},"
            "\"keys_waiting_for_restart\":{},\"config\":{}}}",
            config_.distributor_id, backbone_->epoch(), process_info_json(), publishers,
            registry_.service_count(), registry_.item_count(), groups_json(),
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

}  // namespace mdcast::distributor
