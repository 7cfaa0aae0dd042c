#include "server/cascade/upstream_keys.h"

#include <fstream>
#include <stdexcept>

#include "common/net/host_port.h"
#include "server/server_config.h"

namespace mdcast::server {

namespace {

void check_upstream(const UpstreamKeys& c, config::Problems& problems) {
    for (const auto& parent : c.upstream_parents) {
        HostPort parsed;
        if (!parse_host_port(parent, parsed)) {
            problems.push_back({"upstream.parents", "\"" + parent + "\" is not host:port"});
        }
    }
    if (c.upstream_kind == "tcp" && c.upstream_parents.empty()) {
        problems.push_back({"upstream.parents", "upstream.kind tcp needs at least one parent"});
    }
    if (c.upstream_heartbeat_timeout_ms <= c.upstream_heartbeat_interval_ms) {
        problems.push_back({"upstream.heartbeat_timeout_ms",
                            "must be above upstream.heartbeat_interval_ms (" +
                                std::to_string(c.upstream_heartbeat_interval_ms) + ")"});
    }
}

}  // namespace

void add_upstream_keys(config::Schema<ServerConfig>& s) {
    using C = ServerConfig;
    s.choice("upstream.kind", &C::upstream_kind, "backbone", {"backbone", "tcp"},
             "Where items come from. backbone: the multicast backbone (backbone.*). tcp: parent "
             "mdcast-servers over TCP (upstream.parents), for an edge without multicast; only "
             "the items this server's clients want are subscribed there (docs/cascade.md).");
    s.string_list("upstream.parents", &C::upstream_parents, {},
                  "Parent servers (host:port of their client port), tried in turn: the first "
                  "that answers feeds this server; when its link is lost the next is tried.");
    s.string("upstream.user", &C::upstream_user, "mdcast-edge",
             "User this server logs in as at its parent; with auth on there, that user's "
             "entitlements bound what this server's clients can get.");
    s.string("upstream.password_file", &C::upstream_password_file, "",
             "File whose first line is upstream.user's password at the parent (empty: none).");
    s.integer<uint32_t>("upstream.heartbeat_interval_ms", &C::upstream_heartbeat_interval_ms, 1000,
                        10, 60000, "Pings to the parent (and directory polls) at this interval.");
    s.integer<uint32_t>("upstream.heartbeat_timeout_ms", &C::upstream_heartbeat_timeout_ms, 2000,
                        20, 600000,
                        "Nothing at all read from the parent for this long (data or pong): the "
                        "link is dead, every item held goes suspect and the next parent is tried. "
                        "Progress counts, not pongs: a link busy with data is never dead, however "
                        "long its pongs wait behind the data. Default: two heartbeat intervals.");
    s.integer<uint32_t>("upstream.resync_max_outstanding", &C::upstream_resync_max_outstanding,
                        1000, 1, 1000000,
                        "After a reconnect every item held is asked again with the sequence of "
                        "the image held here (the parent sends images only for items that "
                        "changed): at most this many asked and not yet answered at once.");
    s.integer<uint32_t>("upstream.reconnect_delay_ms", &C::upstream_reconnect_delay_ms, 500, 10,
                        60000, "Wait before trying the next parent after a link is lost or fails.");
    s.boolean("upstream.standby_link", &C::upstream_standby_link, true,
              "With two or more parents: keep a second link logged in to the next one, idle "
              "(pings only), and move to it at once when the active link is lost (warm "
              "standby), then open a new standby. false: one link, the next parent tried after "
              "upstream.reconnect_delay_ms.");
    s.boolean("upstream.tls", &C::upstream_tls, false,
              "TLS to the parents (list their clients.tls_port in upstream.parents).");
    s.string("upstream.tls_ca_file", &C::upstream_tls_ca_file, "",
             "PEM CAs the parent's certificate must chain to (empty: the system's trust store).");
    s.string("upstream.tls_cert_file", &C::upstream_tls_cert_file, "",
             "Client certificate for a parent that asks for one (tls.client_certs there).");
    s.string("upstream.tls_key_file", &C::upstream_tls_key_file, "",
             "Private key of upstream.tls_cert_file.");
    s.string("upstream.tls_server_name", &C::upstream_tls_server_name, "",
             "Name the parent's certificate must carry (empty: the host of each parent).");
    s.rule([](const C& c, config::Problems& problems) { check_upstream(c, problems); });
}

void check_upstream_files(const UpstreamKeys& keys, config::Problems& problems) {
    try {
        read_upstream_password(keys);
    } catch (const std::exception& error) {
        problems.push_back({"upstream.password_file", error.what()});
    }
    try {
        upstream_tls_context(keys);
    } catch (const std::exception& error) {
        problems.push_back({"upstream.tls", error.what()});
    }
}

std::shared_ptr<const TlsContext> upstream_tls_context(const UpstreamKeys& keys) {
    if (!keys.upstream_tls) return nullptr;
    TlsClientSettings settings;
    settings.ca_file = keys.upstream_tls_ca_file;
    settings.cert_file = keys.upstream_tls_cert_file;
    settings.key_file = keys.upstream_tls_key_file;
    settings.key_prefix = "upstream.tls_";
    return TlsContext::client(settings);
}

std::string read_upstream_password(const UpstreamKeys& keys) {
    if (keys.upstream_password_file.empty()) return "";
    std::ifstream file(keys.upstream_password_file);
    if (!file) {
        throw std::runtime_error("upstream.password_file: cannot read " +
                                 keys.upstream_password_file);
    }
    std::string password;
    std::getline(file, password);
    while (!password.empty() && (password.back() == '\r' || password.back() == ' ')) {
        password.pop_back();
    }
    return password;
}

}  // namespace mdcast::server
