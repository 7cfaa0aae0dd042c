// mdcast-distributor configuration: the plain struct and its one schema.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/auth/auth_keys.h"
#include "common/config/config_schema.h"
#include "common/daemon/daemon_keys.h"
#include "common/net/udp_socket.h"
#include "distributor/trade_fields.h"

namespace mdcast::distributor {

// The auth.* keys are bound into AuthConfig::auth (common/auth/auth_keys.h), the tls.* keys
// into TlsKeys (declared by add_tls_keys).
struct DistributorConfig : AuthConfig, TlsKeys, AdminLimitKeys {
    std::string log_level;
    std::string log_format;
    std::string log_file;  // empty: stderr
    uint64_t log_max_file_bytes = 0;
    uint32_t log_max_files = 0;
    uint32_t process_sched_slice_us = 0;
    uint32_t shutdown_grace_ms = 0;
    bool admin_enabled = true;
    std::string admin_address;
    uint16_t admin_port = 0;
    std::string admin_token_file;  // empty: POSTs refused
    uint16_t distributor_id = 1;
    uint32_t busy_poll_us = 0;  // SpinPoll; 0: sleep as soon as nothing is ready

    // Publisher listener.
    std::string publishers_address;
    uint16_t publishers_port = 0;
    bool publishers_plaintext = true;
    bool publishers_tls = false;
    uint16_t publishers_tls_port = 0;
    uint32_t publishers_max_connections = 0;
    uint32_t publishers_max_frame_bytes = 0;
    uint64_t publishers_max_output_bytes = 0;
    uint32_t publishers_login_timeout_ms = 0;
    uint32_t publishers_idle_timeout_ms = 0;
    uint32_t publishers_post_timeout_ms = 0;
    uint32_t publishers_max_outstanding_posts = 0;
    uint32_t publishers_max_login_frame_bytes = 0;
    uint32_t publishers_frame_timeout_ms = 0;
    std::string publishers_takeover_secret_file;  // empty: takeover by token or login only
    uint32_t publishers_standby_hold_down_ms = 0;

    // Backbone (multicast out, control in).
    std::string backbone_group;
    uint16_t backbone_port = 0;
    std::string backbone_interface;
    int backbone_ttl = 0;
    bool backbone_loopback = true;
    bool backbone_segmentation_offload = true;
    uint32_t backbone_max_datagram_bytes = 0;
    uint32_t backbone_max_message_bytes = 0;
    uint32_t backbone_flush_interval_us = 0;
    uint32_t backbone_heartbeat_min_us = 0;
    uint32_t backbone_heartbeat_max_ms = 0;
    uint64_t backbone_retransmit_window_bytes = 0;
    uint32_t backbone_retransmit_window_ms = 0;
    uint32_t backbone_repair_linger_us = 0;
    uint64_t backbone_retransmit_rate_bytes_per_s = 0;
    uint32_t backbone_max_repairs_per_nak = 0;
    uint32_t backbone_repairs_per_source_per_s = 0;
    uint64_t backbone_data_rate_bytes_per_s = 0;
    uint64_t backbone_max_backlog_bytes = 0;
    uint32_t backbone_send_buffer_bytes = 0;
    uint16_t backbone_control_port = 0;
    std::vector<std::string> backbone_extra_groups;
    std::string backbone_key_file;
    std::string backbone_previous_key_file;

    // Item registry and image cache.
    uint32_t max_services = 0;
    uint64_t max_items = 0;
    uint64_t max_book_entries = 0;
    uint32_t interest_lease_ms = 0;
    uint32_t release_hold_ms = 0;
    uint32_t max_awaiting_per_service = 0;
    uint32_t backbone_repair_horizon_ms = 0;
    uint64_t max_awaiting_items = 0;

    // Updates counted as trades by their fields (trade_fields.h).
    config::detail::StringListMap trade_fields;  // service (or "*") -> field names or ids
    std::string trade_dictionary_file;

    // Loss injection, for tests only.
    double loss_send_rate = 0;
    uint64_t loss_send_burst_every = 0;
    uint64_t loss_send_burst_length = 0;
    double loss_control_receive_rate = 0;
    uint64_t loss_seed = 1;

    MulticastEndpoint multicast_endpoint() const {
        return {backbone_group, backbone_port, backbone_interface, backbone_ttl, backbone_loopback};
    }
};

const config::Schema<DistributorConfig>& distributor_schema();

// trades.fields resolved to field ids, reading trades.dictionary_file when a
// field is named. What cannot be resolved goes to `problems` (part of the
// preflight), and no service marks trades then.
TradeFields resolve_trade_fields(const DistributorConfig& config, config::Problems& problems);

// The start-up checks beyond the schema's rules: ports differ, and the TLS, users and
// backbone key files load.
config::Problems distributor_preflight(const DistributorConfig& config);

}  // namespace mdcast::distributor
