#include "sdk_options.h"

#include <algorithm>
#include <stdexcept>

#include "common/logging.h"

namespace mdcast::sdk {

namespace {

[[noreturn]] void refuse(const std::string& option, const std::string& why) {
    throw std::invalid_argument(option + ": " + why);
}

void validate(const ConnectionOptions& o, const std::vector<ServerAddress>& servers,
              const char* servers_name) {
    if (servers.empty()) refuse(servers_name, "at least one host:port is needed");
    for (const auto& server : servers) {
        if (server.host.empty() || server.port == 0) {
            refuse(servers_name, "'" + server.to_string() + "' is not host:port");
        }
    }
    if (o.connect_timeout_ms == 0) refuse("connect_timeout_ms", "must be > 0");
    if (o.login_timeout_ms == 0) refuse("login_timeout_ms", "must be > 0");
    if (o.heartbeat_timeout_ms > 0 && o.heartbeat_interval_ms > 0 &&
        o.heartbeat_timeout_ms <= o.heartbeat_interval_ms) {
        refuse("heartbeat_timeout_ms", std::to_string(o.heartbeat_timeout_ms) +
                                           " must be above heartbeat_interval_ms (" +
                                           std::to_string(o.heartbeat_interval_ms) + ")");
    }
    if (o.reconnect_delay_max_ms < o.reconnect_delay_min_ms) {
        refuse("reconnect_delay_max_ms", "must be >= reconnect_delay_min_ms");
    }
    if (!(o.reconnect_jitter >= 0.0 && o.reconnect_jitter <= 1.0)) {
        refuse("reconnect_jitter", "must be within [0, 1]");
    }
    if (o.tls.min_version != "1.2" && o.tls.min_version != "1.3") {
        refuse("tls.min_version", "'" + o.tls.min_version + "' is not 1.2 or 1.3");
    }
    if (o.tls.cert_file.empty() != o.tls.key_file.empty()) {
        refuse(o.tls.cert_file.empty() ? "tls.cert_file" : "tls.key_file",
               "a client certificate needs both tls.cert_file and tls.key_file");
    }
    if (!o.log_level.empty() && std::find(log::kLevelNames.begin(), log::kLevelNames.end(),
                                          o.log_level) == log::kLevelNames.end()) {
        refuse("log_level",
               "'" + o.log_level + "' is not empty, trace, debug, info, warn, error or off");
    }
}

}  // namespace

void validate(const ConsumerOptions& o) {
    validate(o, o.servers, "servers");
    if (o.max_queued_events == 0) refuse("max_queued_events", "must be > 0");
    if (o.max_frame_bytes < 1024) refuse("max_frame_bytes", "must be >= 1024");
    if (o.max_output_bytes < 1024) refuse("max_output_bytes", "must be >= 1024");
    if (o.catch_up_timeout_ms == 0) refuse("catch_up_timeout_ms", "must be > 0");
    if (o.busy_poll_us > 1'000'000) refuse("busy_poll_us", "must be <= 1000000");
}

void validate(const PublisherOptions& o) {
    validate(o, o.distributors, "distributors");
    if (o.publish_to_all) {
        for (size_t i = 0; i < o.distributors.size(); ++i) {
            for (size_t j = 0; j < i; ++j) {
                if (o.distributors[i] == o.distributors[j])
                    refuse("distributors",
                           "publish_to_all lists " + o.distributors[i].to_string() + " twice");
            }
        }
    }
    if (o.max_queued_bytes < 1024) refuse("max_queued_bytes", "must be >= 1024");
    if (o.max_output_bytes < 1024) refuse("max_output_bytes", "must be >= 1024");
}

std::shared_ptr<const TlsContext> tls_context(const ConnectionOptions& o) {
    if (!o.tls.enabled) return nullptr;
    TlsClientSettings settings{o.tls.ca_file,
                               o.tls.cert_file,
                               o.tls.key_file,
                               o.tls.min_version,
                               o.tls.insecure_skip_verify,
                               "tls."};
    try {
        return TlsContext::client(settings);
    } catch (const std::runtime_error& error) {
        throw std::invalid_argument(error.what());
    }
}

LinkSettings link_settings(const ConnectionOptions& o, const ServerAddress& server,
                           uint32_t max_frame_bytes, uint64_t max_output_bytes,
                           std::shared_ptr<const TlsContext> tls) {
    LinkSettings s;
    s.server = server;
    s.user = o.user;
    s.application_id = o.application_id;
    s.position = o.position;
    s.password = o.password;
    s.connect_timeout_ms = o.connect_timeout_ms;
    s.login_timeout_ms = o.login_timeout_ms;
    s.heartbeat_interval_ms = o.heartbeat_interval_ms;
    s.heartbeat_timeout_ms = o.heartbeat_timeout_ms;
    s.max_frame_bytes = max_frame_bytes;
    s.max_output_bytes = max_output_bytes;
    s.tls = std::move(tls);
    s.tls_server_name = o.tls.server_name.empty() ? server.host : o.tls.server_name;
    return s;
}

ReconnectSettings reconnect_settings(const ConnectionOptions& o, size_t server_count) {
    return ReconnectSettings{server_count, std::chrono::milliseconds(o.reconnect_delay_min_ms),
                             std::chrono::milliseconds(o.reconnect_delay_max_ms),
                             o.reconnect_jitter, std::chrono::milliseconds(o.reconnect_stable_ms)};
}

void require_name_fits(const std::string& name, size_t max_bytes, const char* what) {
    if (name.size() <= max_bytes) return;
    throw std::invalid_argument(std::string(what) + " of " + std::to_string(name.size()) +
                                " bytes is longer than the limit of " + std::to_string(max_bytes) +
                                " bytes; nothing was sent");
}

}  // namespace mdcast::sdk
