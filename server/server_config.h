// mdcast-server configuration: the plain struct and its one schema.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/auth/auth_keys.h"
#include "common/config/config_schema.h"
#include "common/daemon/daemon_keys.h"
#include "common/net/udp_socket.h"
#include "server/cascade/upstream_keys.h"

namespace mdcast::server {

// The auth.* keys are bound into AuthConfig::auth (common/auth/auth_keys.h), the tls.* keys
// into TlsKeys (declared by add_tls_keys).
// The upstream.* keys into UpstreamKeys (server/cascade/upstream_keys.h).
struct ServerConfig : AuthConfig, TlsKeys, AdminLimitKeys, UpstreamKeys {
    std::string log_level;
    std::string log_format;
    std::string log_file;  // empty: stderr
    uint64_t log_max_file_bytes = 0;
    uint32_t log_max_files = 0;
    uint32_t process_sched_slice_us = 0;
    uint32_t shutdown_grace_ms = 0;
    uint32_t instance = 1;  // from --instance; not a config key

    // Admin HTTP endpoint (metrics, health, stats).
    bool admin_enabled = true;
    std::string admin_address;
    uint16_t admin_port = 0;
    std::string admin_token_file;  // empty: POSTs refused
    uint32_t admin_max_items_per_answer = 0;

    // Client listener. Instance N listens on clients.port + N - 1.
    std::string clients_address;
    uint16_t clients_port = 0;
    bool clients_plaintext = true;
    bool clients_tls = false;
    uint16_t clients_tls_port = 0;
    uint32_t clients_max_connections = 0;
    uint32_t clients_max_frame_bytes = 0;
    uint32_t clients_max_items_per_request = 0;
    uint32_t clients_max_subscriptions = 0;
    uint32_t clients_max_connections_per_user = 0;    // 0: no limit
    uint32_t clients_max_subscriptions_per_user = 0;  // 0: no limit
    uint32_t clients_heartbeat_interval_ms = 0;
    uint32_t clients_idle_timeout_ms = 0;
    uint32_t clients_login_timeout_ms = 0;
    uint32_t clients_max_login_frame_bytes = 0;
    uint32_t clients_frame_timeout_ms = 0;
    // WebSocket/JSON listener (docs/websocket.md); instance N on ws_port + N - 1.
    uint16_t clients_ws_port = 0;  // 0: off
    bool clients_ws_tls = false;
    std::string clients_ws_dictionary_file;
    std::string clients_ws_web_dir;          // empty: no page at /
    std::string clients_ws_default_service;  // empty: Key.Service required
    uint32_t clients_ws_max_message_bytes = 0;
    uint32_t clients_ws_max_fragments = 0;
    uint32_t clients_ws_dictionary_part_bytes = 0;  // JSON per part of a Dictionary refresh
    bool clients_ws_publish_time = false;

    // Posts (clients' contributions upstream): bounds per client connection.
    uint32_t posts_max_per_second = 0;
    uint32_t posts_max_outstanding = 0;
    uint32_t posts_timeout_ms = 0;

    // Output to clients.
    uint64_t output_max_bytes = 0;
    uint64_t output_guaranteed_bytes = 0;
    uint64_t output_pool_bytes = 0;
    uint32_t output_expected_clients = 0;
    std::string output_slow_consumer_policy;       // "disconnect" or "conflate"
    uint32_t output_max_held_trades = 0;           // trades a conflating client may hold
    std::string output_link_slow_consumer_policy;  // for cascade links: "conflate" or "disconnect"
    uint32_t output_link_max_held_trades = 0;      // trades a conflating link may hold
    uint64_t output_link_max_bytes = 0;            // output queue of a link (0: output.max_bytes)
    uint32_t output_link_max_delay_ms = 0;         // a link's queue bound in time (0: bytes only)
    uint32_t output_link_unsent_bytes = 0;         // TCP_NOTSENT_LOWAT of links (0: kernel's)
    bool output_tcp_nodelay = true;
    uint32_t output_tcp_send_buffer_bytes = 0;
    bool output_timed_writes = false;
    uint32_t output_flush_interval_ms = 0;

    // Backbone (multicast in, control out).
    std::string backbone_group;
    uint16_t backbone_port = 0;
    std::string backbone_interface;
    uint32_t backbone_receive_buffer_bytes = 0;
    uint32_t backbone_max_datagram_bytes = 0;
    uint32_t backbone_max_message_bytes = 0;
    uint32_t backbone_image_request_timeout_ms = 0;
    std::vector<std::string> backbone_extra_groups;
    std::string backbone_key_file;
    std::string backbone_previous_key_file;
    uint32_t backbone_max_sources = 0;
    uint32_t backbone_nak_backoff_min_us = 0;
    uint32_t backbone_nak_backoff_max_us = 0;
    uint32_t backbone_nak_retry_us = 0;
    uint32_t backbone_nak_max_attempts = 0;
    uint64_t backbone_reorder_buffer_bytes = 0;
    uint64_t backbone_max_gap_packets = 0;
    uint32_t backbone_jump_confirmations = 0;
    uint32_t backbone_source_silent_ms = 0;
    uint32_t backbone_rtt_probe_interval_ms = 0;
    uint32_t backbone_busy_poll_us = 0;  // SpinPoll; 0: sleep as soon as nothing is ready

    // Item cache.
    bool cache_enable_cache = true;
    uint64_t cache_max_items = 0;
    uint64_t cache_max_book_entries = 0;
    uint64_t cache_hash_table_size = 0;
    uint32_t cache_max_pending_requests = 0;
    uint32_t cache_max_pending_requests_per_client = 0;
    uint32_t cache_max_pending_requests_per_service = 0;

    // Redundant sources (server/redundancy/).
    std::vector<std::string> redundancy_source_rank;
    uint32_t redundancy_hold_down_ms = 0;
    uint32_t redundancy_switch_slice_items = 0;
    uint32_t redundancy_switch_slice_us = 0;

    // Loss injection, for tests only.
    double loss_receive_rate = 0;
    uint64_t loss_receive_burst_every = 0;
    uint64_t loss_receive_burst_length = 0;
    double loss_receive_duplicate_rate = 0;
    double loss_receive_reorder_rate = 0;
    double loss_control_send_rate = 0;
    uint64_t loss_seed = 1;

    MulticastEndpoint multicast_endpoint() const {
        return {backbone_group, backbone_port, backbone_interface, 0, true};
    }
    // Applies the documented instance rule; 0 stays 0 (pick a free port).
    uint16_t instance_client_port() const {
        return clients_port == 0 ? 0 : static_cast<uint16_t>(clients_port + instance - 1);
    }
    uint16_t instance_tls_port() const {
        return clients_tls_port == 0 ? 0 : static_cast<uint16_t>(clients_tls_port + instance - 1);
    }
    uint16_t instance_ws_port() const {
        return clients_ws_port == 0 ? 0 : static_cast<uint16_t>(clients_ws_port + instance - 1);
    }
    uint16_t instance_admin_port() const {
        return admin_port == 0 ? 0 : static_cast<uint16_t>(admin_port + instance - 1);
    }
};

const config::Schema<ServerConfig>& server_schema();

// The start-up checks beyond the schema's rules, for config.instance: the instance's
// ports fit and differ, and the TLS, users and backbone key files load.
config::Problems server_preflight(const ServerConfig& config);

}  // namespace mdcast::server
