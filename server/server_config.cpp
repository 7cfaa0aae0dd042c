#include "server/server_config.h"

#include "common/auth/auth_keys.h"
#include "common/daemon/config_checks.h"
#include "common/daemon/daemon_keys.h"
#include "common/daemon/shared_keys.h"
#include "common/logging.h"
#include "proto/field_dictionary.h"
#include "proto/limits.h"
#include "server/redundancy/redundancy_config.h"

namespace mdcast::server {

namespace {

void add_websocket_keys(config::Schema<ServerConfig>& s) {
    using C = ServerConfig;
    s.integer<uint16_t>("clients.ws_port", &C::clients_ws_port, 0, 0, 65535,
                        "WebSocket/JSON port for browsers and scripts (docs/websocket.md) of "
                        "instance 1; instance N uses port + N - 1. 0: off.");
    s.boolean("clients.ws_tls", &C::clients_ws_tls, false,
              "wss://: TLS on clients.ws_port with the tls.* certificate (else plain ws://).");
    s.string("clients.ws_dictionary_file", &C::clients_ws_dictionary_file,
             "/etc/mdcast/fields.dict",
             "Field dictionary naming the fields of JSON messages (\"BID\": 101.25).");
    s.string("clients.ws_web_dir", &C::clients_ws_web_dir, "",
             "Directory whose index.html is served at / on clients.ws_port (the watchlist page "
             "of tools/web; installed in /usr/share/mdcast/web). Empty: no page.");
    s.string("clients.ws_default_service", &C::clients_ws_default_service, "",
             "Service of WebSocket item requests without Key.Service, as an LSEG server's "
             "default service (LSEG's clients leave it out). Empty: Key.Service required.");
    s.integer<uint32_t>("clients.ws_max_message_bytes", &C::clients_ws_max_message_bytes, 65536,
                        256, 16 << 20,
                        "Largest WebSocket message a client may send (all its fragments); a "
                        "larger one closes it with code 1009, counted as frame_too_large.");
    s.integer<uint32_t>("clients.ws_max_fragments", &C::clients_ws_max_fragments, 64, 1, 1 << 20,
                        "Frames one WebSocket message may be split into; more close the client "
                        "(a fragmented flood), counted in ws_fragment_floods_total.");
    s.integer<uint32_t>("clients.ws_dictionary_part_bytes", &C::clients_ws_dictionary_part_bytes,
                        16384, 1024, 16 << 20,
                        "Largest JSON of one part of a Dictionary refresh (RWFFld): a larger "
                        "dictionary goes in several messages, Complete false on all but the "
                        "last, as LSEG splits it. Large enough for the whole dictionary: one "
                        "message (lseg-data reads only a refresh's first part).");
    s.boolean("clients.ws_publish_time", &C::clients_ws_publish_time, false,
              "JSON Update and Refresh messages carry \"PublishTime\" (unix ns of the "
              "publisher's stamp), an mdcast extension LSEG clients ignore; for measuring the "
              "age of what a grid shows.")
        .reloads();
}

void add_client_keys(config::Schema<ServerConfig>& s) {
    using C = ServerConfig;
    s.address("clients.address", &C::clients_address, "127.0.0.1",
              "Address the client listener binds to.");
    s.integer<uint16_t>("clients.port", &C::clients_port, 14002, 0, 65535,
                        "TCP port for clients of instance 1; instance N uses port + N - 1 "
                        "(0: pick a free port and log it).");
    s.boolean(
        "clients.plaintext", &C::clients_plaintext, true,
        "Listen for plaintext TCP clients on clients.port. false: TLS only (needs clients.tls).");
    s.boolean("clients.tls", &C::clients_tls, false,
              "Listen for TLS clients on clients.tls_port, with the certificate in tls.cert_file.");
    s.integer<uint16_t>(
        "clients.tls_port", &C::clients_tls_port, 14102, 0, 65535,
        "TLS port for clients of instance 1; instance N uses port + N - 1 (0: pick a "
        "free port and log it).");
    s.integer<uint32_t>("clients.max_connections", &C::clients_max_connections, 1000, 1, 1000000,
                        "Client connections accepted at once; more are refused with a reason.")
        .reloads();
    s.integer<uint32_t>("clients.max_frame_bytes", &C::clients_max_frame_bytes, 65536,
                        proto::kMinFrameBodyBytes, proto::kMaxFrameBodyBytes,
                        "Largest frame body a client may send.");
    s.integer<uint32_t>("clients.max_items_per_request", &C::clients_max_items_per_request, 10000,
                        1, 1000000, "Item names in one (batch) subscribe request.")
        .reloads();
    s.integer<uint32_t>("clients.max_subscriptions", &C::clients_max_subscriptions, 100000, 1,
                        10000000, "Open items per client connection.")
        .reloads();
    s.integer<uint32_t>(
         "clients.max_connections_per_user", &C::clients_max_connections_per_user, 0, 0, 1000000,
         "Connections one user (the login's user name) may hold at once; a login beyond it is "
         "closed limit_reached, so one user cannot take every slot of clients.max_connections. "
         "0: no limit (one user running many connections, such as a load test).")
        .reloads();
    s.integer<uint32_t>(
         "clients.max_subscriptions_per_user", &C::clients_max_subscriptions_per_user, 0, 0,
         100000000,
         "Open items one user may hold over all its connections; an item beyond it is closed "
         "LIMIT_REACHED. 0: no limit.")
        .reloads();
    s.integer<uint32_t>("clients.heartbeat_interval_ms", &C::clients_heartbeat_interval_ms, 5000,
                        100, 600000, "Clients are asked to ping at least this often.");
    s.integer<uint32_t>("clients.idle_timeout_ms", &C::clients_idle_timeout_ms, 15000, 0, 3600000,
                        "Close a client silent for this long (0: never).");
    s.integer<uint32_t>("clients.login_timeout_ms", &C::clients_login_timeout_ms, 5000, 100, 600000,
                        "A client must log in within this time of connecting (of its TLS handshake "
                        "ending); bytes that are not a login do not extend it. Closed as "
                        "not_logged_in.");
    add_frame_rule_keys(s, "clients", &C::clients_max_login_frame_bytes,
                        &C::clients_frame_timeout_ms);
    add_websocket_keys(s);
}

// Posts: contributions clients send upstream to a service's publisher (docs/protocol.md, "Posts").
void add_post_keys(config::Schema<ServerConfig>& s) {
    using C = ServerConfig;
    s.integer<uint32_t>("posts.max_per_second", &C::posts_max_per_second, 100, 1, 1000000,
                        "Posts one client connection may send per second (bursts up to one "
                        "second's worth); more are refused LIMIT_REACHED, never queued.")
        .reloads();
    s.integer<uint32_t>("posts.max_outstanding", &C::posts_max_outstanding, 64, 1, 1000000,
                        "Posts of one client connection awaiting their answer; more are refused "
                        "LIMIT_REACHED.")
        .reloads();
    s.integer<uint32_t>("posts.timeout_ms", &C::posts_timeout_ms, 5000, 100, 600000,
                        "A post whose answer has not come back within this time is refused "
                        "with the text \"timeout: ...\" (control datagrams can be lost; posts "
                        "are never sent twice).")
        .reloads();
}

void add_output_keys(config::Schema<ServerConfig>& s) {
    using C = ServerConfig;
    s.integer<uint64_t>("output.guaranteed_bytes", &C::output_guaranteed_bytes, 256 << 10, 4096,
                        1ull << 32,
                        "Output every client may always queue (the seed's guaranteedOutputBuffers, "
                        "in bytes).");
    s.integer<uint64_t>("output.max_bytes", &C::output_max_bytes, 8 << 20, 4096, 1ull << 32,
                        "Most output one client may queue, borrowing beyond guaranteed_bytes from "
                        "the pool (the seed's maxOutputBuffers, in bytes). Past it the client is a "
                        "slow consumer.");
    s.integer<uint64_t>("output.pool_bytes", &C::output_pool_bytes, 256 << 20, 0, 1ull << 40,
                        "Shared pool the clients borrow from beyond guaranteed_bytes (the seed's "
                        "poolSize, in bytes). A client that needs it while it is empty is a slow "
                        "consumer.");
    s.integer<uint32_t>(
        "output.expected_clients", &C::output_expected_clients, 32, 1, 1000000,
        "Clients expected to be behind at the same time, each up to output.max_bytes. The server "
        "refuses to start (and --check-config fails) when (max_bytes - guaranteed_bytes) x "
        "expected_clients is more than output.pool_bytes: otherwise the pool runs out first and "
        "clients are closed as slow consumers well before their own limit.");
    s.rule([](const C& c, config::Problems& problems) {
        std::string why = [&c]() -> std::string {
            const uint64_t borrow = c.output_max_bytes > c.output_guaranteed_bytes
                                        ? c.output_max_bytes - c.output_guaranteed_bytes
                                        : 0;
            if (borrow * c.output_expected_clients <= c.output_pool_bytes) return "";
            return "output.max_bytes " + std::to_string(c.output_max_bytes) +
                   " lets each client borrow " + std::to_string(borrow) +
                   " bytes beyond output.guaranteed_bytes, but output.pool_bytes " +
                   std::to_string(c.output_pool_bytes) + " holds that for only " +
                   std::to_string(borrow ? c.output_pool_bytes / borrow : 0) + " of the " +
                   std::to_string(c.output_expected_clients) +
                   " output.expected_clients: lower max_bytes to at most " +
                   std::to_string(c.output_guaranteed_bytes +
                                  c.output_pool_bytes / c.output_expected_clients) +
                   ", or raise pool_bytes to " +
                   std::to_string(borrow * c.output_expected_clients) +
                   ", or lower expected_clients";
        }();
        if (!why.empty()) problems.push_back({"output.max_bytes", std::move(why)});
    });
    s.choice("output.slow_consumer_policy", &C::output_slow_consumer_policy, "disconnect",
             {"disconnect", "conflate"},
             "disconnect: tell the client and close it. conflate: stop queueing its updates and, "
             "once its queue drains, send one conflated update per changed item (current values "
             "from the cache, marked conflated, counting the updates it stands for); trades are "
             "never merged: each is held and sent in order, after the quotes before it. Needs "
             "cache.enable_cache.");
    s.integer<uint32_t>("output.max_held_trades", &C::output_max_held_trades, 10000, 1, 10000000,
                        "Trades one conflating client may hold (slow_consumer_policy conflate) "
                        "until its queue drains; one more closes it as a slow consumer, telling "
                        "it why (counted in held_trade_limit_total). Applies to new connections.")
        .reloads();
    s.choice("output.link_slow_consumer_policy", &C::output_link_slow_consumer_policy, "conflate",
             {"conflate", "disconnect"},
             "The slow-consumer policy for cascade links: edge servers logged in here "
             "(docs/cascade.md). conflate (the default, for WAN links): the link gets the latest "
             "value of every item and every trade, and is cut only past "
             "output.link_max_held_trades. Conflation needs cache.enable_cache: without the "
             "cache a slow link is disconnected. Applies to new connections.")
        .reloads();
    s.integer<uint64_t>("output.link_max_bytes", &C::output_link_max_bytes, 16777216, 0,
                        uint64_t{1} << 32,
                        "Output queue of a cascade link at most, in bytes (0: output.max_bytes); "
                        "past it the link policy applies. Below it the queue is bounded by time "
                        "(output.link_max_delay_ms at the link's measured rate); this caps the "
                        "memory of a fast link (16 MiB: about 160 ms at a million updates/s) and "
                        "alone bounds the queue until the rate is first measured. Applies to new "
                        "connections.")
        .reloads();
    s.integer<uint32_t>("output.link_max_delay_ms", &C::output_link_max_delay_ms, 100, 0, 60000,
                        "A cascade link's output queue bound in time: past what the link, at "
                        "its measured drain rate, sends in this many milliseconds the link "
                        "policy applies (never above output.link_max_bytes). It is the parent's "
                        "share of the edge's staleness. 0: output.link_max_bytes alone. Applies "
                        "to new connections.")
        .reloads();
    s.integer<uint32_t>("output.link_unsent_bytes", &C::output_link_unsent_bytes, 8192, 0, 1 << 30,
                        "TCP_NOTSENT_LOWAT of cascade links, at most: bytes the kernel holds not "
                        "yet sent (those in flight do not count, so a long fast link keeps its "
                        "speed). A link is held to what it drains in a fifth of "
                        "output.link_max_delay_ms, at least 2 KiB, within this. Keeps the "
                        "kernel's share of a slow link's staleness small. 0: the kernel's send "
                        "buffer. Applies to new connections.")
        .reloads();
    s.integer<uint32_t>("output.link_max_held_trades", &C::output_link_max_held_trades, 100000, 1,
                        10000000,
                        "Trades one conflating cascade link may hold until its queue drains; one "
                        "more cuts it as a slow consumer, telling the edge why (counted in "
                        "links_cut_slow_total). Applies to new connections.")
        .reloads();
    s.boolean("output.tcp_nodelay", &C::output_tcp_nodelay, true,
              "TCP_NODELAY on client sockets (the seed's tcpNoDelay).");
    s.integer<uint32_t>("output.tcp_send_buffer_bytes", &C::output_tcp_send_buffer_bytes, 0, 0,
                        1 << 30, "SO_SNDBUF of client sockets (0: kernel default).");
    s.boolean("output.timed_writes", &C::output_timed_writes, false,
              "true: coalesce output and write every output.flush_interval_ms (throughput); "
              "false: write at the end of each loop iteration (latency).");
    s.integer<uint32_t>(
        "output.flush_interval_ms", &C::output_flush_interval_ms, 10, 1, 10000,
        "Flush period when output.timed_writes is true (the seed's flushInterval).");
}

void add_backbone_keys(config::Schema<ServerConfig>& s) {
    using C = ServerConfig;
    add_backbone_group_keys(s);
    add_backbone_message_keys(s);
    s.integer<uint32_t>("backbone.receive_buffer_bytes", &C::backbone_receive_buffer_bytes, 8 << 20,
                        0, 1 << 30,
                        "SO_RCVBUF of the multicast socket; raise net.core.rmem_max to match.");
    s.integer<uint32_t>("backbone.max_datagram_bytes", &C::backbone_max_datagram_bytes,
                        proto::kMaxDatagramBytes, proto::kMinDatagramBytes,
                        proto::kMaxDatagramBytes, "Largest datagram accepted.");
    s.integer<uint32_t>("backbone.image_request_timeout_ms", &C::backbone_image_request_timeout_ms,
                        1000, 10, 60000, "Resend an unanswered image request after this long.");
    add_backbone_redundancy_and_key_keys(s);
    s.integer<uint32_t>("backbone.max_sources", &C::backbone_max_sources, 16, 1, 1024,
                        "Distributors (by distributor.id) tracked at once; packets from more are "
                        "dropped and counted.");
    s.integer<uint32_t>("backbone.nak_backoff_min_us", &C::backbone_nak_backoff_min_us, 50, 0,
                        1000000,
                        "A missing packet is NAKed after a random wait in [min, max]: it covers "
                        "reordering and lets a repair another server asked for arrive first. "
                        "Size it to the one-way delay (see docs/backbone.md).");
    s.integer<uint32_t>("backbone.nak_backoff_max_us", &C::backbone_nak_backoff_max_us, 300, 0,
                        10000000, "Upper end of the NAK back-off.");
    s.integer<uint32_t>("backbone.nak_retry_us", &C::backbone_nak_retry_us, 1000, 10, 10000000,
                        "Ask again after this long when no repair came (doubling with each "
                        "retry, up to 128 x): at least one round trip plus the distributor's "
                        "repair_linger_us.");
    s.integer<uint32_t>("backbone.nak_max_attempts", &C::backbone_nak_max_attempts, 20, 1, 10000,
                        "NAKs per missing packet before it is declared lost (items go suspect "
                        "and are re-imaged).");
    s.integer<uint64_t>("backbone.reorder_buffer_bytes", &C::backbone_reorder_buffer_bytes,
                        32 << 20, 65536, 1ull << 34,
                        "Packets held after a gap until it is repaired; when full the oldest gap "
                        "is given up.");
    s.integer<uint64_t>("backbone.max_gap_packets", &C::backbone_max_gap_packets, 100000, 16,
                        100000000,
                        "A jump in sequence larger than this is lost at once, not NAKed (and is "
                        "only believed when backbone.jump_confirmations packets agree).");
    s.integer<uint32_t>("backbone.jump_confirmations", &C::backbone_jump_confirmations, 3, 1, 1000,
                        "Packets or heartbeats that must agree before a sequence jump beyond "
                        "backbone.max_gap_packets is taken; fewer are dropped and counted "
                        "(jumps_refused_total): one forged datagram cannot stall the backbone.");
    s.integer<uint32_t>("backbone.source_silent_ms", &C::backbone_source_silent_ms, 3000, 10,
                        3600000,
                        "No packet or heartbeat for this long: every item goes suspect until the "
                        "distributor is heard again and images are re-requested.");
    s.integer<uint32_t>("backbone.rtt_probe_interval_ms", &C::backbone_rtt_probe_interval_ms, 1000,
                        10, 3600000, "Round-trip probes to the distributor (for NAK sizing).");
    s.integer<uint32_t>("backbone.busy_poll_us", &C::backbone_busy_poll_us, 0, 0, 1000000,
                        "Idle strategy. 0: sleep in epoll as soon as nothing is ready. > 0: after "
                        "every backbone update keep polling the sockets without sleeping for this "
                        "long (busy-spin, then sleep): the next datagram is taken without a kernel "
                        "wake-up, but the server keeps a core busy while traffic flows. Only on "
                        "hosts with a core to spare for it.");
}

// Output sizes: the guarantee is within the limit, and the pool can lend at least one
// client what its limit allows beyond the guarantee (else the limit is never reached
// and every client past its guarantee is a slow consumer at once).
void check_output_sizes(const ServerConfig& c, config::Problems& problems) {
    if (c.output_guaranteed_bytes > c.output_max_bytes) {
        problems.push_back({"output.guaranteed_bytes", std::to_string(c.output_guaranteed_bytes) +
                                                           " is more than output.max_bytes (" +
                                                           std::to_string(c.output_max_bytes) +
                                                           ")"});
    } else if (c.output_max_bytes - c.output_guaranteed_bytes > c.output_pool_bytes) {
        problems.push_back(
            {"output.max_bytes",
             std::to_string(c.output_max_bytes) + " needs " +
                 std::to_string(c.output_max_bytes - c.output_guaranteed_bytes) +
                 " bytes from the pool beyond output.guaranteed_bytes, but output.pool_bytes "
                 "is " +
                 std::to_string(c.output_pool_bytes) +
                 ": no client could reach it (raise the pool or lower the limit)"});
    }
}

void add_rules(config::Schema<ServerConfig>& s) {
    s.rule([](const ServerConfig& c, config::Problems& problems) {
        config::require_multicast_group("backbone.group", c.backbone_group, problems);
        config::require_multicast_groups("backbone.extra_groups", c.backbone_extra_groups,
                                         problems);
        config::require_listener("clients", c.clients_plaintext, c.clients_tls, problems);
        check_output_sizes(c, problems);
        if (!c.cache_enable_cache && c.output_slow_consumer_policy == "conflate") {
            problems.push_back({"output.slow_consumer_policy",
                                "conflate needs cache.enable_cache: true (conflated updates are "
                                "built from the cached images)"});
        }
        if (c.backbone_nak_backoff_min_us > c.backbone_nak_backoff_max_us) {
            problems.push_back({"backbone.nak_backoff_min_us",
                                "more than backbone.nak_backoff_max_us (" +
                                    std::to_string(c.backbone_nak_backoff_max_us) + ")"});
        }
    });
}

config::Schema<ServerConfig> build_schema() {
    using C = ServerConfig;
    config::Schema<C> s("mdcast-server");
    add_log_keys(s);
    add_process_keys(s);
    add_shutdown_keys(s);
    add_admin_keys(s);
    add_admin_token_key(s);
    add_admin_limit_keys(s);
    s.integer<uint32_t>("admin.max_items_per_answer", &C::admin_max_items_per_answer, 1000, 1,
                        100000,
                        "Most items GET /items lists in one answer (its limit parameter); a "
                        "larger limit is refused with 400, so one caller cannot make the server "
                        "build megabytes of JSON on its event loop.");
    add_client_keys(s);
    add_post_keys(s);
    add_tls_keys(s);
    add_output_keys(s);
    add_backbone_keys(s);
    add_upstream_keys(s);
    add_auth_keys(s);
    s.boolean("cache.enable_cache", &C::cache_enable_cache, true,
              "true: keep every item's image and serve new subscribers from it. false (the seed's "
              "enableCache: False): keep only item state and request each new subscriber's image "
              "upstream (less memory, an extra round trip per subscribe).");
    s.integer<uint64_t>("cache.max_items", &C::cache_max_items, 1000000, 1, 100000000,
                        "Items held in the cache; beyond it new items are refused.");
    s.integer<uint64_t>(
        "cache.max_book_entries", &C::cache_max_book_entries, 10000, 1, proto::kMaxMapEntries,
        "Entries one book item (docs/books.md) may hold in the cache; an add beyond "
        "it is dropped and the item turns suspect (LIMIT_REACHED) until a refresh "
        "that fits.");
    s.integer<uint64_t>("cache.hash_table_size", &C::cache_hash_table_size, 100003, 1, 100000000,
                        "Initial buckets of the item table (the seed's hashTableSize).");
    s.integer<uint32_t>("cache.max_pending_requests", &C::cache_max_pending_requests, 100000, 1,
                        10000000, "Item names waiting for an image from upstream.");
    s.integer<uint32_t>("cache.max_pending_requests_per_client",
                        &C::cache_max_pending_requests_per_client, 10000, 1, 10000000,
                        "Subscriptions of one client connection waiting for an image from "
                        "upstream; beyond it its new ones are refused LIMIT_REACHED, so one "
                        "client cannot fill cache.max_pending_requests for everyone.");
    s.integer<uint32_t>("cache.max_pending_requests_per_service",
                        &C::cache_max_pending_requests_per_service, 50000, 1, 10000000,
                        "Names of one service waiting for an image from upstream; beyond it new "
                        "names of that service are refused LIMIT_REACHED, so a service whose "
                        "source never answers cannot fill cache.max_pending_requests for the "
                        "others.");
    add_redundancy_keys(s);
    s.real("testing.loss.receive_rate", &C::loss_receive_rate, 0, 0, 1,
           "TESTING ONLY: drop this fraction of backbone packets on receive.");
    s.integer<uint64_t>("testing.loss.receive_burst_every", &C::loss_receive_burst_every, 0, 0,
                        1ull << 40, "TESTING ONLY: every N backbone packets ...");
    s.integer<uint64_t>("testing.loss.receive_burst_length", &C::loss_receive_burst_length, 0, 0,
                        1ull << 20, "TESTING ONLY: ... drop this many in a row.");
    s.real("testing.loss.receive_duplicate_rate", &C::loss_receive_duplicate_rate, 0, 0, 1,
           "TESTING ONLY: process this fraction of backbone packets twice.");
    s.real("testing.loss.receive_reorder_rate", &C::loss_receive_reorder_rate, 0, 0, 1,
           "TESTING ONLY: let the next packet overtake this fraction of packets.");
    s.real("testing.loss.control_send_rate", &C::loss_control_send_rate, 0, 0, 1,
           "TESTING ONLY: drop this fraction of control packets (NAKs, requests) on send.");
    add_loss_seed_key(s);
    add_rules(s);
    return s;
}

// The TCP ports instance `instance` binds.
std::vector<config::BoundPort> instance_ports(const ServerConfig& c, uint32_t instance) {
    const auto of_instance = [instance](uint16_t port) {
        return port == 0 ? 0 : uint32_t{port} + instance - 1;  // 0 stays "pick a free port"
    };
    return {{"clients.port", of_instance(c.clients_port), c.clients_plaintext},
            {"clients.tls_port", of_instance(c.clients_tls_port), c.clients_tls},
            {"clients.ws_port", of_instance(c.clients_ws_port), c.clients_ws_port != 0},
            {"admin.port", of_instance(c.admin_port), c.admin_enabled}};
}

// Instances 1..N share the file and run side by side: N's ports (each key's port
// + N - 1) must miss every lower instance's, or N cannot start beside them (a
// clients.ws_port one above clients.port is instance 2's client port).
void check_ports(const ServerConfig& c, config::Problems& problems) {
    const auto ours = instance_ports(c, c.instance);
    config::require_distinct_ports(ours, problems);
    for (uint32_t lower = 1; lower < c.instance; ++lower) {
        config::require_ports_apart(ours, instance_ports(c, lower),
                                    "instance " + std::to_string(lower), problems);
    }
}

}  // namespace

const config::Schema<ServerConfig>& server_schema() {
    static const config::Schema<ServerConfig> schema = build_schema();
    return schema;
}

config::Problems server_preflight(const ServerConfig& c) {
    config::Problems problems;
    check_ports(c, problems);
    config::require_local_address("clients.address", c.clients_address, problems);
    if (c.admin_enabled) config::require_local_address("admin.address", c.admin_address, problems);
    config::require_local_address("backbone.interface", c.backbone_interface, problems);
    config::check_tls_files(c.clients_tls || (c.clients_ws_port != 0 && c.clients_ws_tls),
                            tls_server_settings(c), problems);
    if (c.clients_ws_port != 0) {
        try {
            proto::FieldDictionary::load_file(c.clients_ws_dictionary_file);
        } catch (const std::exception& error) {
            problems.push_back({"clients.ws_dictionary_file", error.what()});
        }
        config::check_web_dir("clients.ws_web_dir", c.clients_ws_web_dir, problems);
    }
    config::check_users_file("auth.users_file", c.auth.users_file, problems);
    config::check_admin_token("admin.token_file", c.admin_token_file, problems);
    config::check_descriptor_limit("clients.max_connections", c.clients_max_connections, problems);
    config::check_key_files("backbone", c.backbone_key_file, c.backbone_previous_key_file,
                            problems);
    check_upstream_files(c, problems);
    return problems;
}

}  // namespace mdcast::server
