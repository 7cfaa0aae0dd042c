#include "server/cascade/cascade_upstream.h"

#include <stdexcept>

#include "server/cascade/link_role.h"
#include "server/cascade/tcp_upstream.h"

namespace mdcast::server {

std::unique_ptr<Upstream> make_tcp_upstream(EventLoop& loop, const ServerConfig& config,
                                            Upstream::Handler& handler) {
    TcpUpstreamSettings settings;
    for (const auto& text : config.upstream_parents) {
        HostPort parent;
        if (!parse_host_port(text, parent)) {
            throw std::runtime_error("upstream.parents: \"" + text + "\" is not host:port");
        }
        settings.parents.push_back(parent);
    }
    if (settings.parents.empty()) throw std::runtime_error("upstream.parents: empty");
    settings.user = config.upstream_user;
    settings.password = read_upstream_password(config);
    settings.application_id = link_application_id(config.instance);
    settings.heartbeat_interval_ms = config.upstream_heartbeat_interval_ms;
    settings.heartbeat_timeout_ms = config.upstream_heartbeat_timeout_ms;
    settings.reconnect_delay_ms = config.upstream_reconnect_delay_ms;
    settings.standby_link = config.upstream_standby_link;
    settings.resync_max_outstanding = config.upstream_resync_max_outstanding;
    settings.tls = upstream_tls_context(config);
    settings.tls_server_name = config.upstream_tls_server_name;
    return std::make_unique<TcpUpstream>(loop, std::move(settings), handler);
}

}  // namespace mdcast::server
