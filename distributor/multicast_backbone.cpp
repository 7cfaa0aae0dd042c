#include "distributor/multicast_backbone.h"

#include <arpa/inet.h>

namespace mdcast::distributor {

namespace {

BackboneSender::Settings sender_settings(const DistributorConfig& config, uint16_t control_port,
                                         const PacketSigner* signer) {
    BackboneSender::Settings settings;
    settings.endpoints = multicast_endpoints(config.multicast_endpoint(),
                                             config.backbone_extra_groups, "backbone.extra_groups");
    settings.max_datagram_bytes = config.backbone_max_datagram_bytes;
    settings.max_message_bytes = config.backbone_max_message_bytes;
    settings.flush_interval_us = config.backbone_flush_interval_us;
    settings.heartbeat_min_us = config.backbone_heartbeat_min_us;
    settings.heartbeat_max_ms = config.backbone_heartbeat_max_ms;
    settings.send_buffer_bytes = config.backbone_send_buffer_bytes;
    settings.segmentation_offload = config.backbone_segmentation_offload;
    settings.control_port = control_port;
    settings.retransmit_window_bytes = config.backbone_retransmit_window_bytes;
    settings.retransmit_window_ms = config.backbone_retransmit_window_ms;
    settings.repair_horizon_ms = config.backbone_repair_horizon_ms;
    settings.repair_linger_us = config.backbone_repair_linger_us;
    settings.retransmit_rate_bytes_per_s = config.backbone_retransmit_rate_bytes_per_s;
    settings.max_repairs_per_nak = config.backbone_max_repairs_per_nak;
    settings.repairs_per_source_per_s = config.backbone_repairs_per_source_per_s;
    settings.data_rate_bytes_per_s = config.backbone_data_rate_bytes_per_s;
    settings.max_backlog_bytes = config.backbone_max_backlog_bytes;
    settings.signer = signer;
    settings.send_loss = {config.loss_send_rate, config.loss_send_burst_every,
                          config.loss_send_burst_length, config.loss_seed};
    return settings;
}

std::string description(const DistributorConfig& config, uint16_t control_port) {
    return fmt::format(
        "backbone {}:{}{} via {} ttl {}; control port {}", config.backbone_group,
        config.backbone_port,
        config.backbone_extra_groups.empty()
            ? std::string()
            : " (+" + std::to_string(config.backbone_extra_groups.size()) + " redundant groups)",
        config.backbone_interface, config.backbone_ttl, control_port);
}

}  // namespace

ServerId server_id_of(uint64_t wire_id, const sockaddr_in& from) {
    if (wire_id != 0) return wire_id;
    return uint64_t{ntohl(from.sin_addr.s_addr)} << 16 | ntohs(from.sin_port);
}

MulticastBackbone::MulticastBackbone(EventLoop& loop, const DistributorConfig& config,
                                     uint64_t epoch, BackboneOut::Handler& handler)
    : handler_(handler),
      signer_(
          PacketSigner::from_files(config.backbone_key_file, config.backbone_previous_key_file)),
      control_(loop, config.backbone_interface, config.backbone_control_port, *this,
               LossSettings{config.loss_control_receive_rate, 0, 0, config.loss_seed + 1},
               signer_.get()),
      sender_(loop, sender_settings(config, control_.port(), signer_.get()), epoch,
              [&handler](bool congested) { handler.on_congestion(congested); }),
      description_(description(config, control_.port())) {}

void MulticastBackbone::on_image_request(const wire::v1::ImageRequest& request,
                                         const sockaddr_in& from) {
    auto private_answer =
        handler_.on_image_request(request, server_id_of(request.server_id(), from));
    if (private_answer) control_.reply_not_found(*private_answer, from);
}

void MulticastBackbone::on_nak(const wire::v1::Nak& nak, const sockaddr_in& from) {
    sender_.on_nak(nak, ntohl(from.sin_addr.s_addr));
}

void MulticastBackbone::on_interest(const wire::v1::Interest& interest, const sockaddr_in& from) {
    handler_.on_interest(interest, server_id_of(interest.server_id(), from));
}

void MulticastBackbone::on_post(const wire::v1::Post& post, const sockaddr_in& from) {
    const ServerId server = server_id_of(post.server_id(), from);
    if (posting_servers_.size() >= kMaxPostingServers && !posting_servers_.contains(server))
        posting_servers_.clear();  // the posting servers of the moment learn it again
    posting_servers_[server] = from;
    handler_.on_post(post, server);
}

void MulticastBackbone::answer_post(ServerId to, const wire::v1::PostAck& ack) {
    const auto server = posting_servers_.find(to);
    if (server != posting_servers_.end()) control_.reply_post_ack(ack, server->second);
}

void MulticastBackbone::register_metrics(MetricsRegistry& m) const {
    const auto& b = sender_.counters();
    const auto& c = control_.counters();
    m.counter("packets_total", "Backbone datagrams sent", [&b] { return b.packets_sent; });
    m.counter("segmented_packets_total",
              "Backbone datagrams sent in UDP segmentation offload runs (all groups)",
              [this] { return sender_.segmented_datagrams(); });
    m.counter("padding_bytes_total",
              "Zero bytes the segmented datagrams carried to make a run equal-size (all groups)",
              [this] { return sender_.padding_bytes(); });
    m.gauge("segmentation_offload",
            "1 while the primary group's datagrams go out with UDP segmentation offload",
            [this] { return sender_.segmenting() ? 1 : 0; });
    m.counter("bytes_total", "Backbone bytes sent", [&b] { return b.bytes_sent; });
    m.counter("messages_total", "Messages sent on the backbone", [&b] { return b.messages_sent; });
    m.counter("heartbeats_total", "Heartbeats sent", [&b] { return b.heartbeats_sent; });
    m.counter("send_failures_total", "Datagrams the kernel refused",
              [&b] { return b.send_failures; });
    m.counter("oversize_total", "Messages larger than backbone.max_message_bytes, refused",
              [&b] { return b.oversize_messages; });
    m.counter("messages_in_parts_total", "Messages larger than a datagram, sent in parts",
              [&b] { return b.messages_in_parts; });
    m.counter("message_parts_total", "Parts of messages larger than a datagram",
              [&b] { return b.message_parts_sent; });
    m.counter("naks_total", "NAKs received", [&b] { return b.naks_received; });
    m.counter("nak_sequences_total", "Sequences asked for in NAKs",
              [&b] { return b.nak_sequences; });
    m.counter("repairs_total", "Repairs sent", [&b] { return b.repairs_sent; });
    m.counter("repair_bytes_total", "Bytes of repairs sent", [&b] { return b.repair_bytes; });
    m.counter("naks_lingering_total", "NAKs within repair_linger_us, not re-sent",
              [&b] { return b.naks_lingering; });
    m.counter("naks_beyond_window_total", "NAKs behind the trailing edge",
              [&b] { return b.naks_beyond_window; });
    m.counter("naks_invalid_total", "NAK ranges of sequences not sent yet",
              [&b] { return b.naks_invalid; });
    m.counter("nak_sequences_over_cap_total",
              "NAK sequences beyond backbone.max_repairs_per_nak in one NAK, ignored",
              [&b] { return b.nak_sequences_over_cap; });
    m.counter("repairs_source_limited_total",
              "Repairs refused: the NAK's source address spent backbone.repairs_per_source_per_s",
              [&b] { return b.repairs_source_limited; });
    m.counter("retransmit_rate_limited_total", "Repairs skipped by the retransmit rate limit",
              [&b] { return b.retransmit_rate_limited; });
    m.counter("data_rate_limited_total", "Datagrams that waited in the rate-limit backlog",
              [&b] { return b.data_rate_limited; });
    m.counter("injected_drops_total", "Packets dropped by testing.loss",
              [&b, &c] { return b.injected_drops + c.injected_drops; });
    m.gauge("window_packets", "Datagrams held for repair",
            [this] { return sender_.window().packets(); });
    m.gauge("window_bytes", "Bytes held for repair", [this] { return sender_.window().bytes(); });
    m.gauge("window_seconds", "How long the oldest datagram held for repair has been held",
            [this] { return static_cast<double>(sender_.window().held_ns(monotonic_ns())) / 1e9; });
    m.counter("retransmit_window_short_total",
              "Datagrams evicted for room while younger than backbone.repair_horizon_ms "
              "(the window is too small for the rate)",
              [this] { return sender_.window().short_evictions(); });
    register_control_metrics(m);
}

// What servers sent to the control port.
void MulticastBackbone::register_control_metrics(MetricsRegistry& m) const {
    const auto& c = control_.counters();
    m.counter("image_requests_total", "Image requests from servers",
              [&c] { return c.image_requests; });
    m.counter("not_found_replies_total",
              "Image requests for unknown names, answered NOT_FOUND by unicast to the asker",
              [&c] { return c.not_found_replies; });
    m.counter("directory_queries_total", "Directory queries from servers",
              [&c] { return c.directory_queries; });
    m.counter("malformed_control_total", "Control datagrams dropped as malformed",
              [&c] { return c.malformed; });
    m.counter("bad_signatures_total", "Control datagrams unsigned or forged, dropped",
              [&c] { return c.bad_signatures; });
    m.counter("interest_messages_total", "Interest messages (renewals, releases) from servers",
              [&c] { return c.interest_messages; });
    m.counter("control_posts_total", "Posts from servers on the control port",
              [&c] { return c.posts; });
    m.counter("post_answers_sent_total", "Post answers sent by unicast to the posting server",
              [&c] { return c.post_answers; });
}

}  // namespace mdcast::distributor
