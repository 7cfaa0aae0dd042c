#include "server/backbone/backbone_upstream.h"

#include "common/clock.h"
#include "server/backbone/backbone_receiver.h"

namespace mdcast::server {

namespace {

LossRecoverySettings recovery_settings(const ServerConfig& config) {
    LossRecoverySettings r;
    r.nak_backoff_min_ns = int64_t{config.backbone_nak_backoff_min_us} * 1000;
    r.nak_backoff_max_ns = int64_t{config.backbone_nak_backoff_max_us} * 1000;
    r.nak_retry_ns = int64_t{config.backbone_nak_retry_us} * 1000;
    r.nak_max_attempts = config.backbone_nak_max_attempts;
    r.max_buffered_bytes = config.backbone_reorder_buffer_bytes;
    r.max_gap_packets = config.backbone_max_gap_packets;
    r.jump_confirmations = config.backbone_jump_confirmations;
    r.seed = config.loss_seed ^ (uint64_t{config.instance} << 32) ^
             static_cast<uint64_t>(monotonic_ns());
    return r;
}

BackboneReceiver::Settings receiver_settings(const ServerConfig& config) {
    BackboneReceiver::Settings settings;
    settings.groups = multicast_endpoints(config.multicast_endpoint(), config.backbone_extra_groups,
                                          "backbone.extra_groups");
    settings.max_sources = config.backbone_max_sources;
    settings.signer =
        PacketSigner::from_files(config.backbone_key_file, config.backbone_previous_key_file);
    settings.receive_buffer_bytes = config.backbone_receive_buffer_bytes;
    settings.max_datagram_bytes = config.backbone_max_datagram_bytes;
    settings.max_message_bytes = config.backbone_max_message_bytes;
    settings.recovery = recovery_settings(config);
    settings.source_silent_ms = config.backbone_source_silent_ms;
    settings.rtt_probe_interval_ms = config.backbone_rtt_probe_interval_ms;
    settings.receive_loss = {config.loss_receive_rate,           config.loss_receive_burst_every,
                             config.loss_receive_burst_length,   config.loss_seed + config.instance,
                             config.loss_receive_duplicate_rate, config.loss_receive_reorder_rate};
    settings.control_send_loss = {config.loss_control_send_rate, 0, 0,
                                  config.loss_seed + 1000 + config.instance};
    return settings;
}

}  // namespace

std::unique_ptr<Upstream> make_backbone_upstream(EventLoop& loop, const ServerConfig& config,
                                                 Upstream::Handler& handler) {
    return std::make_unique<BackboneReceiver>(loop, receiver_settings(config), handler);
}

}  // namespace mdcast::server
