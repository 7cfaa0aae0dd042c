#include "distributor/distributor_config.h"

#include <optional>

#include "common/auth/auth_keys.h"
#include "common/daemon/config_checks.h"
#include "common/daemon/daemon_keys.h"
#include "common/daemon/shared_keys.h"
#include "common/logging.h"
#include "distributor/takeover_rule.h"
#include "proto/field_dictionary.h"
#include "proto/limits.h"

namespace mdcast::distributor {

namespace {

// The window must hold what servers may still ask for: never promise a repair
// it cannot make (docs/backbone.md, "Sizing the retransmit window").
void check_repair_horizon(const DistributorConfig& c, config::Problems& problems) {
    const uint64_t horizon_ms = c.backbone_repair_horizon_ms;
    if (c.backbone_retransmit_window_ms < horizon_ms) {
        problems.push_back({"backbone.retransmit_window_ms",
                            "less than backbone.repair_horizon_ms (" + std::to_string(horizon_ms) +
                                " ms): servers would ask for repairs the window no longer holds"});
    }
    const uint64_t rate = c.backbone_data_rate_bytes_per_s;
    if (rate > 0 && c.backbone_retransmit_window_bytes < rate * horizon_ms / 1000) {
        problems.push_back(
            {"backbone.retransmit_window_bytes",
             "holds " + std::to_string(c.backbone_retransmit_window_bytes * 1000 / rate) +
                 " ms at backbone.data_rate_bytes_per_s (" + std::to_string(rate) +
                 "), less than backbone.repair_horizon_ms (" + std::to_string(horizon_ms) +
                 " ms): at least " + std::to_string(rate * horizon_ms / 1000) + " bytes needed"});
    }
}

void add_rules(config::Schema<DistributorConfig>& s) {
    s.rule([](const DistributorConfig& c, config::Problems& problems) {
        config::require_multicast_group("backbone.group", c.backbone_group, problems);
        config::require_multicast_groups("backbone.extra_groups", c.backbone_extra_groups,
                                         problems);
        config::require_listener("publishers", c.publishers_plaintext, c.publishers_tls, problems);
        check_repair_horizon(c, problems);
        if (uint64_t{c.backbone_heartbeat_min_us} > uint64_t{c.backbone_heartbeat_max_ms} * 1000) {
            problems.push_back({"backbone.heartbeat_min_us",
                                "more than backbone.heartbeat_max_ms (" +
                                    std::to_string(c.backbone_heartbeat_max_ms) + " ms)"});
        }
    });
}

config::Schema<DistributorConfig> build_schema() {
    using C = DistributorConfig;
    config::Schema<C> s("mdcast-distributor");
    add_log_keys(s);
    add_process_keys(s);
    add_shutdown_keys(s);

    s.integer<uint16_t>("distributor.id", &C::distributor_id, 1, 1, 65535,
                        "Unique among the distributors a server joins: it prefixes this "
                        "distributor's epochs, item ids and service ids.");
    s.integer<uint32_t>("distributor.busy_poll_us", &C::busy_poll_us, 0, 0, 1000000,
                        "Idle strategy. 0: sleep in epoll as soon as nothing is ready. > 0: after "
                        "every wake-up keep polling the sockets without sleeping for this long "
                        "(busy-spin, then sleep): publishers' messages are taken without a kernel "
                        "wake-up, but the distributor keeps a core busy while traffic flows. Only "
                        "on hosts with a core to spare for it.");
    add_admin_keys(s);
    add_admin_token_key(s);
    add_admin_limit_keys(s);
    s.address("publishers.address", &C::publishers_address, "127.0.0.1",
              "Address the publisher listener binds to.");
    s.integer<uint16_t>("publishers.port", &C::publishers_port, 14001, 0, 65535,
                        "TCP port for publishers (0: pick a free port and log it).");
    s.boolean("publishers.plaintext", &C::publishers_plaintext, true,
              "Listen for plaintext publishers on publishers.port. false: TLS only (needs "
              "publishers.tls).");
    s.boolean(
        "publishers.tls", &C::publishers_tls, false,
        "Listen for TLS publishers on publishers.tls_port, with the certificate in tls.cert_file.");
    s.integer<uint16_t>("publishers.tls_port", &C::publishers_tls_port, 14101, 0, 65535,
                        "TLS port for publishers (0: pick a free port and log it).");
    s.integer<uint32_t>("publishers.max_connections", &C::publishers_max_connections, 64, 1, 100000,
                        "Publisher connections accepted at once; more are refused.")
        .reloads();
    s.integer<uint32_t>("publishers.max_frame_bytes", &C::publishers_max_frame_bytes, 1048576,
                        proto::kMinFrameBodyBytes, proto::kMaxFrameBodyBytes,
                        "Largest frame body a publisher may send; a larger one closes its "
                        "connection frame_too_large. Announced at login (LoginResponse "
                        "max_frame_bytes): the SDK publisher refuses a larger message at the call "
                        "and closes an item whose kept image grew past it (docs/sdk.md). A "
                        "reload applies to publishers that log in after it; a connected one "
                        "keeps the limit it was told at its login.")
        .reloads();
    s.integer<uint64_t>("publishers.max_output_bytes", &C::publishers_max_output_bytes, 4 << 20,
                        4096, 1ull << 32, "Output queued to one publisher before it is closed.");
    s.integer<uint32_t>("publishers.login_timeout_ms", &C::publishers_login_timeout_ms, 5000, 100,
                        600000,
                        "A publisher must log in within this time of connecting (of its TLS "
                        "handshake ending); bytes that are not a login do not extend it. Closed as "
                        "not_logged_in.");
    s.integer<uint32_t>("publishers.idle_timeout_ms", &C::publishers_idle_timeout_ms, 30000, 0,
                        3600000, "Close a publisher silent for this long (0: never).");
    s.integer<uint32_t>("publishers.post_timeout_ms", &C::publishers_post_timeout_ms, 4000, 100,
                        600000,
                        "A post a publisher has not answered within this time is refused to the "
                        "posting server with the text \"timeout: ...\" (keep it below the "
                        "servers' posts.timeout_ms).");
    s.integer<uint32_t>("publishers.max_outstanding_posts", &C::publishers_max_outstanding_posts,
                        256, 1, 1000000,
                        "Posts one publisher connection may have unanswered; more are refused "
                        "LIMIT_REACHED without reaching it.");
    add_frame_rule_keys(s, "publishers", &C::publishers_max_login_frame_bytes,
                        &C::publishers_frame_timeout_ms);
    s.string("publishers.takeover_secret_file", &C::publishers_takeover_secret_file, "",
             "File whose first line (at least 16 characters) is a secret shared with publisher "
             "processes (mdcast-source --takeover-secret-file, PublisherOptions::takeover_secret): "
             "one presenting it takes over a service owned by another connection of the same "
             "user (a restarted or standby process, docs/hardening.md). Empty: only the owner's "
             "own reconnect (its takeover token) or, with auth, the same user's login may.");
    s.integer<uint32_t>("publishers.standby_hold_down_ms", &C::publishers_standby_hold_down_ms,
                        5000, 0, 3600000,
                        "Standby publishers of one service (ServiceAnnounce.standby_rank): a "
                        "better-ranked publisher that comes back becomes active again only once "
                        "it has stayed connected this long (each reconnect starts the wait "
                        "again, so a flapping publisher causes no switch storm). Failing over "
                        "from a publisher that went never waits. Checked once a second.")
        .reloads();
    add_tls_keys(s);

    add_backbone_group_keys(s);
    add_backbone_message_keys(s);
    s.integer<int>("backbone.ttl", &C::backbone_ttl, 0, 0, 255,
                   "Multicast TTL: 0 = this host only; 1 = this LAN segment.");
    s.boolean("backbone.loopback", &C::backbone_loopback, true,
              "Deliver multicast to receivers on this host (needed for local servers).");
    s.integer<uint32_t>("backbone.max_datagram_bytes", &C::backbone_max_datagram_bytes,
                        proto::kDefaultDatagramBytes, proto::kMinDatagramBytes,
                        proto::kMaxDatagramBytes,
                        "Largest datagram: 1400 fits a 1500-byte MTU; 8972 for jumbo frames. "
                        "Never above the path MTU.");
    s.boolean("backbone.segmentation_offload", &C::backbone_segmentation_offload, true,
              "Hand a flush's datagrams to the kernel as one UDP segmentation offload send "
              "(Linux 4.18+; the NIC segments where it can). Datagrams then carry zero padding "
              "up to the largest of their run, and servers must be this version or later. Turned "
              "off by itself when the kernel or route refuses it.");
    s.integer<uint32_t>("backbone.flush_interval_us", &C::backbone_flush_interval_us, 0, 0, 1000000,
                        "0: send at the end of each loop iteration (natural batching); > 0: "
                        "coalesce for this long (the seed's rrmpFlushInterval).");
    s.integer<uint32_t>("backbone.heartbeat_min_us", &C::backbone_heartbeat_min_us, 1000, 100,
                        1000000,
                        "First heartbeat after the last data: bounds how long tail loss stays "
                        "unseen. Heartbeats then double up to heartbeat_max_ms while idle.");
    s.integer<uint32_t>("backbone.heartbeat_max_ms", &C::backbone_heartbeat_max_ms, 1000, 1, 60000,
                        "Longest gap between heartbeats, also under load (late joiners learn the "
                        "control port from them).");
    s.integer<uint64_t>("backbone.retransmit_window_bytes", &C::backbone_retransmit_window_bytes,
                        64 << 20, 65536, 1ull << 34, "Sent datagrams kept for repair, in bytes.");
    s.integer<uint32_t>("backbone.retransmit_window_ms", &C::backbone_retransmit_window_ms, 10000,
                        10, 3600000, "Sent datagrams kept for repair at most this long.");
    s.integer<uint32_t>(
        "backbone.repair_horizon_ms", &C::backbone_repair_horizon_ms, 2000, 1, 3600000,
        "How long servers may ask for a repair (their nak_backoff_max_us, nak_retry_us and "
        "nak_max_attempts: 1.8 s with their defaults; docs/backbone.md gives the formula). "
        "retransmit_window_ms must be at least this, and with data_rate_bytes_per_s set the "
        "window's bytes must hold this long at that rate; at run time a datagram evicted "
        "younger than this is counted and logged.");
    s.integer<uint32_t>("backbone.repair_linger_us", &C::backbone_repair_linger_us, 500, 0, 1000000,
                        "A packet just repaired is not re-sent for this long, however many "
                        "servers ask (NAK storms cost one send).");
    s.integer<uint64_t>("backbone.retransmit_rate_bytes_per_s",
                        &C::backbone_retransmit_rate_bytes_per_s, 50000000, 0, 1ull << 40,
                        "Byte rate limit for repairs (0: unlimited). NAKs over it are ignored; "
                        "servers ask again.");
    s.integer<uint32_t>("backbone.max_repairs_per_nak", &C::backbone_max_repairs_per_nak, 1024, 1,
                        1000000,
                        "Sequences of one NAK looked at; the rest are ignored (counted) and the "
                        "server asks again. One unsigned datagram cannot buy more repairs.");
    s.integer<uint32_t>(
        "backbone.repairs_per_source_per_s", &C::backbone_repairs_per_source_per_s, 10000, 0,
        100000000,
        "Repairs per second one NAK source address may cause (a burst of one second's worth; 0: "
        "unlimited). Beyond it its NAKs are ignored (counted) and the server asks again, so one "
        "peer cannot spend the retransmit budget of every other server.");
    s.integer<uint64_t>("backbone.data_rate_bytes_per_s", &C::backbone_data_rate_bytes_per_s, 0, 0,
                        1ull << 40,
                        "Byte rate limit for new data (0: unlimited). Over it datagrams wait in "
                        "a backlog.");
    s.integer<uint64_t>("backbone.max_backlog_bytes", &C::backbone_max_backlog_bytes, 16 << 20,
                        65536, 1ull << 34,
                        "When the rate-limited backlog reaches this, publishers are not read "
                        "until it drains (back-pressure).");
    s.integer<uint32_t>("backbone.send_buffer_bytes", &C::backbone_send_buffer_bytes, 4 << 20, 0,
                        1 << 30, "SO_SNDBUF of the multicast socket (0: kernel default).");
    add_backbone_redundancy_and_key_keys(s);
    s.integer<uint16_t>("backbone.control_port", &C::backbone_control_port, 0, 0, 65535,
                        "UDP port on backbone.interface where servers send image requests "
                        "(0: pick a free port; servers learn it from heartbeats).");

    s.integer<uint32_t>("registry.max_services", &C::max_services, 256, 1, 65535,
                        "Services that may be announced.");
    s.integer<uint64_t>("registry.max_items", &C::max_items, 1000000, 1, 100000000,
                        "Items that may be registered (each holds its cached image).");
    s.integer<uint64_t>("registry.max_book_entries", &C::max_book_entries, 10000, 1,
                        proto::kMaxMapEntries,
                        "Entries one book item (docs/books.md) may hold in the image cache; an add "
                        "beyond it is dropped and the item turns suspect (LIMIT_REACHED) until a "
                        "refresh that fits.");
    s.integer<uint32_t>(
        "interactive.interest_lease_ms", &C::interest_lease_ms, 10000, proto::kMinInterestLeaseMs,
        3600000,
        "A server's interest in an item of an interactive service lasts this long unless "
        "renewed (servers renew every second): a server killed, or whose releases are lost, "
        "stops counting after it.");
    s.integer<uint32_t>("interactive.release_hold_ms", &C::release_hold_ms, 3000, 0, 600000,
                        "When no server wants an item of an interactive service any more, wait "
                        "this long before telling its source to stop (Unsubscribe): a client "
                        "unsubscribing and subscribing again at once does not flap the source.");
    s.integer<uint32_t>("interactive.max_awaiting_per_service", &C::max_awaiting_per_service, 50000,
                        1, 100000000,
                        "Names of one interactive service asked for by servers and not yet "
                        "answered with an image by its source. A name asked beyond it is refused "
                        "LIMIT_REACHED to the asking server alone, never registered.");
    s.integer<uint64_t>("interactive.max_awaiting_items", &C::max_awaiting_items, 200000, 1,
                        100000000,
                        "Names awaiting their source's answer over every interactive service "
                        "together: a flood of names never fills registry.max_items.");
    s.string_list_map(
        "trades.fields", &C::trade_fields,
        "Per service (its name, or \"*\" for every service without an entry), the fields whose "
        "presence makes an update a trade when its publisher did not mark it (Update.trade): "
        "the distributor marks it, and conflation never merges a trade away. Field names from "
        "trades.dictionary_file, or ids.");
    s.string("trades.dictionary_file", &C::trade_dictionary_file, "/etc/mdcast/fields.dict",
             "Field dictionary naming the fields of trades.fields (read only when it names one).");
    s.real("testing.loss.send_rate", &C::loss_send_rate, 0, 0, 1,
           "TESTING ONLY: drop this fraction of data packets on send.");
    s.integer<uint64_t>("testing.loss.send_burst_every", &C::loss_send_burst_every, 0, 0,
                        1ull << 40, "TESTING ONLY: every N data packets ...");
    s.integer<uint64_t>("testing.loss.send_burst_length", &C::loss_send_burst_length, 0, 0,
                        1ull << 20, "TESTING ONLY: ... drop this many in a row.");
    s.real("testing.loss.control_receive_rate", &C::loss_control_receive_rate, 0, 0, 1,
           "TESTING ONLY: drop this fraction of control packets (NAKs, requests) on receive.");
    add_loss_seed_key(s);
    add_auth_keys(s);
    add_rules(s);
    return s;
}

}  // namespace

const config::Schema<DistributorConfig>& distributor_schema() {
    static const config::Schema<DistributorConfig> schema = build_schema();
    return schema;
}

static void check_takeover_secret(const std::string& path, config::Problems& problems) {
    if (path.empty()) return;
    try {
        load_takeover_secret(path);
    } catch (const std::exception& error) {
        problems.push_back({"publishers.takeover_secret_file", error.what()});
    }
}

TradeFields resolve_trade_fields(const DistributorConfig& c, config::Problems& problems) {
    std::optional<proto::FieldDictionary> dictionary;
    if (TradeFields::names_fields(c.trade_fields)) {
        try {
            dictionary = proto::FieldDictionary::load_file(c.trade_dictionary_file);
        } catch (const std::exception& error) {
            problems.push_back({"trades.dictionary_file", error.what()});
            return {};
        }
    }
    try {
        return TradeFields(c.trade_fields, dictionary ? &*dictionary : nullptr);
    } catch (const std::invalid_argument& error) {
        problems.push_back({"trades.fields", error.what()});
        return {};
    }
}

config::Problems distributor_preflight(const DistributorConfig& c) {
    config::Problems problems;
    config::require_distinct_ports(
        {{"publishers.port", c.publishers_port, c.publishers_plaintext},
         {"publishers.tls_port", c.publishers_tls_port, c.publishers_tls},
         {"admin.port", c.admin_port, c.admin_enabled}},
        problems);
    config::require_local_address("publishers.address", c.publishers_address, problems);
    if (c.admin_enabled) config::require_local_address("admin.address", c.admin_address, problems);
    config::require_local_address("backbone.interface", c.backbone_interface, problems);
    config::check_tls_files(c.publishers_tls, tls_server_settings(c), problems);
    config::check_users_file("auth.users_file", c.auth.users_file, problems);
    config::check_admin_token("admin.token_file", c.admin_token_file, problems);
    config::check_descriptor_limit("publishers.max_connections", c.publishers_max_connections,
                                   problems);
    config::check_key_files("backbone", c.backbone_key_file, c.backbone_previous_key_file,
                            problems);
    check_takeover_secret(c.publishers_takeover_secret_file, problems);
    resolve_trade_fields(c, problems);
    return problems;
}

}  // namespace mdcast::distributor
