// The server's WebSocket/JSON port (docs/websocket.md): its listener, the
// dictionary and page it serves, and its counters. The sessions it accepts are
// ClientSessions like any other, with a WsSession for the protocol.
#include <fstream>
#include <sstream>

#include "server/server.h"

namespace mdcast::server {

namespace {

std::string read_page(const std::string& dir) {
    if (dir.empty()) return "";
    const std::string path = dir + "/index.html";
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("clients.ws_web_dir: cannot read " + path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

uint16_t Server::ws_port() const {
    if (!ws_listeners_) return 0;
    return config_.clients_ws_tls ? ws_listeners_->tls_port() : ws_listeners_->port();
}

void Server::start_websocket() {
    if (config_.clients_ws_port == 0) return;
    json_ = std::make_unique<JsonEncoder>(
        proto::FieldDictionary::load_file(config_.clients_ws_dictionary_file));
    json_->set_publish_time(config_.clients_ws_publish_time);
    json_dictionary_ = std::make_unique<JsonDictionary>(json_->dictionary(),
                                                        config_.clients_ws_dictionary_part_bytes);
    ws_page_ = read_page(config_.clients_ws_web_dir);
    ws_settings_.max_message_bytes = config_.clients_ws_max_message_bytes;
    ws_settings_.max_login_message_bytes = config_.clients_max_login_frame_bytes;
    ws_settings_.max_fragments = config_.clients_ws_max_fragments;
    ws_settings_.heartbeat_interval_ms = config_.clients_heartbeat_interval_ms;
    ws_settings_.default_service = config_.clients_ws_default_service;
    ws_settings_.json.max_names = config_.clients_max_items_per_request;
    ws_settings_.encoder = json_.get();
    ws_settings_.dictionary = json_dictionary_.get();
    ws_settings_.page = &ws_page_;
    ws_settings_.counters = &ws_counters_;
    const bool tls = config_.clients_ws_tls;
    ListenerSettings settings{"clients.ws",
                              config_.clients_address,
                              !tls,
                              config_.instance_ws_port(),
                              tls,
                              config_.instance_ws_port(),
                              1024,
                              tls_server_settings(config_),
                              config_.tls_handshake_timeout_ms};
    ws_listeners_ = std::make_unique<DaemonListeners>(
        loop_, settings, [this](int fd, std::string peer, bool on_tls) {
            on_accept(fd, std::move(peer), on_tls, true);
        });
    register_websocket_metrics();
}

void Server::register_websocket_metrics() {
    auto& m = metrics_;
    const WsCounters& w = ws_counters_;
    m.counter("ws_upgrades_total", "WebSocket handshakes completed", [&w] { return w.upgrades; });
    m.counter("ws_handshakes_refused_total",
              "HTTP requests on the WebSocket port answered 400/404/405/431",
              [&w] { return w.handshakes_refused; });
    m.counter("ws_pages_served_total", "Watchlist pages served at / on the WebSocket port",
              [&w] { return w.pages_served; });
    m.counter("ws_messages_in_total", "JSON text messages received",
              [&w] { return w.messages_in; });
    m.counter("ws_fragment_floods_total",
              "WebSocket clients closed for splitting a message into more than "
              "clients.ws_max_fragments frames",
              [&w] { return w.fragment_floods; });
    m.counter("ws_too_large_total",
              "WebSocket clients closed for a message over clients.ws_max_message_bytes",
              [&w] { return w.too_large; });
    m.counter("ws_binary_refused_total", "WebSocket clients closed for sending binary data",
              [&w] { return w.binary_refused; });
    m.counter("ws_protocol_errors_total", "WebSocket framing errors found by wslay",
              [&w] { return w.protocol_errors; });
    for (const JsonError error : {JsonError::kNotJson, JsonError::kUnknownType,
                                  JsonError::kBadRequest, JsonError::kTooMany}) {
        const auto i = static_cast<size_t>(error);
        m.counter("ws_json_errors_total", "JSON messages answered with an Error, by kind",
                  {{"kind", std::string(json_error_name(error))}},
                  [&w, i] { return w.json_errors[i]; });
    }
    m.counter("ws_pings_sent_total", "Pings sent to silent WebSocket clients",
              [&w] { return w.pings_sent; });
    m.counter("ws_dictionary_requests_total",
              "Dictionary requests (RWFFld, RWFEnum) answered, refusals included",
              [&w] { return w.dictionary_requests; });
    const JsonDictionary& d = *json_dictionary_;
    m.counter("ws_dictionary_encodings_total",
              "Dictionary answers encoded to JSON (once per name, verbosity and streaming, "
              "shared by every request)",
              [&d] { return d.encodings(); });
    const FanoutCounters& f = fanout_.counters();
    m.counter("ws_update_encodings_total",
              "Updates encoded to JSON (once per item and view, shared by its WebSocket "
              "subscribers)",
              [&f] { return f.json_update_encodings; });
}

}  // namespace mdcast::server
