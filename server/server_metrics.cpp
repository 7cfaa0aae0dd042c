// The server's figures: every counter declared once in the metrics registry
// (read by /metrics and the counters log line), the health verdict (/healthz)
// and the per-client table (/stats).
#include "common/daemon/process_metrics.h"
#include "common/daemon/reload_status.h"
#include "proto/field_values.h"
#include "server/server.h"

namespace mdcast::server {

// Every counter of the server, declared once: the admin endpoint's /metrics and
// the counters log line both read this registry.
void Server::register_metrics() {
    auto& m = metrics_;
    const auto& c = counters_;
    const auto& f = fanout_.counters();
    const auto clients = [this](auto read) {
        double sum = 0;
        for (const auto& [id, client] : clients_) {
            if (client->is_open()) sum += static_cast<double>(read(*client));
        }
        return sum;
    };
    m.gauge("clients", "Client connections open",
            [clients] { return clients([](auto&) { return 1; }); });
    m.gauge("subscriptions", "Open item subscriptions over all clients", [this, clients] {
        return clients([this](ClientSession& s) { return fanout_.subscription_count(s); });
    });
    m.gauge("items", "Items in the cache", [this] { return cache_.size(); });
    m.gauge("subscribed_items", "Items with at least one subscriber",
            [this] { return fanout_.subscribed_item_count(); });
    m.gauge("pending", "Item names waiting for an image from upstream",
            [this] { return recovery_.pending_count(); });
    const auto& in = interest_.counters();
    m.counter("interest_released_total",
              "Interactive items whose last subscriber here left, released upstream",
              [&in] { return in.released; });
    m.counter("interest_renewed_total", "Interactive item ids renewed upstream (every second)",
              [&in] { return in.renewed; });
    m.counter("interest_messages_total", "Interest messages queued for distributors",
              [&in] { return in.messages; });
    m.counter("interest_unsent_total",
              "Interest messages not sent: the distributor's control address not known yet",
              [&in] { return in.unsent; });
    upstream_->register_metrics(m);
    register_redundancy_metrics();
    m.counter("refreshes_in_total", "Refreshes received", [&c] { return c.refreshes_in; });
    m.counter("updates_in_total", "Updates received", [&c] { return c.updates_in; });
    hop_probe_.register_metrics(m, "update");
    m.counter("busy_poll_passes_total",
              "Loop passes made without sleeping because of backbone.busy_poll_us",
              [this] { return spinner_.passes(); });
    m.counter("statuses_in_total", "Item statuses received", [&c] { return c.statuses_in; });
    m.counter("cache_full_total", "Refreshes of new items refused: cache.max_items reached",
              [&c] { return c.cache_full; });
    m.counter("book_limited_total",
              "Book items that went over cache.max_book_entries (entries dropped, item suspect) "
              "or whose refresh's map was refused",
              [&c] { return c.book_limited; });
    m.counter("waiting_for_source_total",
              "Item requests answered open/suspect: no source for their service yet",
              [this] { return recovery_.counters().waiting_for_source; });
    m.counter("pending_client_limit_total",
              "Subscriptions refused over cache.max_pending_requests_per_client",
              [this] { return recovery_.counters().client_limit_refusals; });
    m.counter("pending_service_limit_total",
              "Subscriptions refused over cache.max_pending_requests_per_service",
              [this] { return recovery_.counters().service_limit_refusals; });
    m.counter("pending_limit_total", "Subscriptions refused over cache.max_pending_requests",
              [this] { return recovery_.counters().table_limit_refusals; });
    m.counter("not_found_in_total", "NOT_FOUND answers the distributor sent to this server alone",
              [&c] { return c.not_found_in; });
    m.counter("loss_reimages_merged_total",
              "Unrecoverable loss that hit an item already being re-imaged: no second request",
              [&c] { return c.loss_reimages_merged; });
    m.counter("refused_in_total",
              "LIMIT_REACHED answers the distributor sent to this server alone (a name over its "
              "bounds on names awaiting an interactive source)",
              [&c] { return c.refused_in; });
    m.counter("malformed_messages_total", "Messages dropped as malformed",
              [&c] { return c.malformed_messages; });
    m.counter("foreign_messages_total", "Messages for another distributor's ids, dropped",
              [&c] { return c.foreign_messages; });
    m.counter("item_gaps_total", "Updates that skipped an item's sequence",
              [&c] { return c.item_gaps; });
    m.counter("dropped_total", "Updates dropped: stale, no image or unknown item",
              [&c] { return c.updates_dropped; });
    m.gauge("items_suspect",
            "Cached items whose data is not current (stale or suspect), except those of "
            "items_released",
            [this] { return count_not_current(false); });
    m.gauge("items_released",
            "Cached items not current because nobody here subscribes to them: an interactive "
            "service, up, whose source was told to stop them",
            [this] { return count_not_current(true); });
    m.counter("refreshes_out_total", "Refreshes sent to clients", [&f] { return f.refreshes_out; });
    m.counter("updates_out_total", "Updates sent to clients", [&f] { return f.updates_out; });
    m.counter("statuses_out_total", "Statuses sent to clients", [&f] { return f.statuses_out; });
    m.counter("group_statuses_out_total",
              "Group statuses sent to clients (one per client for a service or source event)",
              [&f] { return f.group_statuses_out; });
    m.counter("group_status_items_total", "Item statuses the group statuses sent stood for",
              [&f] { return f.group_status_items; });
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
    m.gauge("pool_bytes", "Size of the shared output pool (output.pool_bytes)",
            [this] { return output_pool_.pool(); });
    m.gauge("pool_borrowed", "Bytes borrowed from output.pool_bytes",
            [this] { return output_pool_.borrowed(); });
    m.gauge("pool_peak", "Most bytes ever borrowed from the pool",
            [this] { return output_pool_.peak_borrowed(); });
    m.gauge("shared_blocks", "Shared output blocks alive (one copy of an update for many clients)",
            [] { return SharedBlock::live_blocks(); });
    m.gauge("shared_block_bytes", "Bytes of the shared output blocks alive",
            [] { return SharedBlock::live_bytes(); });
    m.counter("shared_updates_total",
              "Updates copied once for a group of subscribers and queued to each by reference",
              [&f] { return f.shared_updates; });
    m.counter("slow_consumers_total", "Clients disconnected as slow consumers",
              [&c] { return c.slow_consumers; });
    m.gauge("conflating", "Clients conflating now",
            [clients] { return clients([](ClientSession& s) { return s.conflating() ? 1 : 0; }); });
    m.counter("conflation_episodes_total", "Times a client started conflating", [&c, clients] {
        return static_cast<double>(c.conflation_episodes) +
               clients([](ClientSession& s) { return s.conflation_episodes(); });
    });
    m.counter("conflated_out_total", "Messages sent from conflation backlogs",
              [&f] { return f.conflated_out; });
    m.counter("conflation_trades_held_total",
              "Trades held for conflating clients, never merged (each sent in order once the "
              "client's queue drains)",
              [&c, clients] {
                  return static_cast<double>(c.trades_held) +
                         clients([](ClientSession& s) { return s.trades_held(); });
              });
    m.gauge("conflation_trades_waiting", "Trades held by conflating clients now",
            [clients] { return clients([](ClientSession& s) { return s.trades_waiting(); }); });
    m.counter("held_trade_limit_total",
              "Conflating clients closed slow_consumer holding output.max_held_trades trades",
              [&c] { return c.held_trade_limit; });
    m.counter("resync_unchanged_out_total",
              "Resync answers sent: the subscriber's image was current, no image sent "
              "(Subscribe.known_seqs, an edge reconnecting)",
              [&f] { return f.unchanged_out; });
    m.counter("resync_unchanged_in_total",
              "Resync answers from the upstream that made the image held here current again",
              [&c] { return c.unchanged_in; });
    m.counter("resync_unchanged_refused_total",
              "Resync answers for an image this cache no longer held: a fresh image asked for",
              [&c] { return c.unchanged_refused; });
    m.counter("links_cut_slow_total",
              "Cascade links (edge servers) cut as slow consumers: a hard bound reached "
              "(output.link_max_held_trades, output.max_bytes with the disconnect policy)",
              [&c] { return c.links_cut_slow; });
    m.gauge("links_conflating", "Cascade links (edge servers) conflating now", [clients] {
        return clients([](ClientSession& s) { return s.is_link() && s.conflating() ? 1 : 0; });
    });
    m.counter("conflated_suspect_images_total",
              "Conflation drains that sent a suspect item its image (values and status), not a "
              "status alone",
              [&f] { return f.conflated_suspect_images; });
    m.counter("paced_held_total",
              "Updates merged into a conflate_ms interval instead of being sent then (once per "
              "interval, which an item's subscribers asking the same one share)",
              [&f] { return f.paced_held; });
    m.counter("paced_out_total", "Conflated updates sent when a conflate_ms interval ended",
              [&f] { return f.paced_out; });
    m.counter("paced_trades_total",
              "Trades on a conflate_ms subscription that sent what was owed first, then themselves",
              [&f] { return f.paced_trades; });
    m.counter("paced_flushed_total",
              "Of those, sent before the interval ended because a status followed",
              [&f] { return f.paced_flushed; });
    m.gauge("paced_waiting", "conflate_ms intervals with updates owed, waiting to end",
            [this] { return fanout_.paced_waiting(); });
    m.counter("refused_total", "Connections refused (limit or shutdown)",
              [this] { return clients_.refused(); });
    auth_.register_metrics(m);
    register_reload_metrics(m);
    register_post_metrics(m);
    m.counter("not_entitled_total", "Item requests refused: not entitled",
              [&c] { return c.not_entitled; });
    m.counter("entitlement_revocations_total", "Subscriptions closed not entitled by a reload",
              [&c] { return c.entitlement_revocations; });
    m.counter("users_removed_total", "Clients closed because a reload removed their user",
              [&c] { return c.users_removed; });
    m.counter("user_connections_refused_total",
              "Logins closed: the user held clients.max_connections_per_user connections",
              [&c] { return c.user_connections_refused; });
    m.counter("user_subscriptions_refused_total",
              "Items refused: the user held clients.max_subscriptions_per_user subscriptions",
              [&c] { return c.user_subscriptions_refused; });
    listeners_.register_metrics(m, [clients] {
        return clients([](ClientSession& s) { return s.connection().is_tls() ? 1 : 0; });
    });
    for (size_t i = 0; i < kCloseReasonCount; ++i) {
        const std::string reason(close_reason_name(static_cast<CloseReason>(i)));
        m.counter("closes_total", "Client connections closed, by reason", {{"reason", reason}},
                  [this, i] { return clients_.closes(i); });
    }
    register_process_metrics(m, "mdcast-server");
}

// The line is built only when it is logged: building it reads every metric and the
// process (/proc), a stall of the loop every 10 s that nobody sees at info level.
void Server::log_counters(spdlog::level::level_enum level) {
    if (log_->should_log(level)) log_->log(level, "{}", metrics_.log_line());
}

// Healthy while serving and the upstream (distributors, or a parent) is heard.
std::pair<bool, std::string> Server::health() const {
    if (clients_.shutting_down()) return {false, "shutting down"};
    if (drain_.active) return {false, "draining: clients are moving to other instances"};
    std::string problem = upstream_->unhealthy_reason();
    if (problem.empty()) return {true, "ok"};
    return {false, std::move(problem)};
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
            json_escape(client->application_id()), fanout_.subscription_count(*client),
            c.queued_bytes(), client->messages_out(), c.bytes_out(), c.bytes_in(),
            client->rates().messages_out_per_s, client->rates().bytes_out_per_s,
            client->conflating() ? "true" : "false");
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

}  // namespace mdcast::server
