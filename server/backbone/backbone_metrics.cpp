// The backbone's figures, declared in the server's registry under the names
// they have always had (mdcast_server_packets_total, ...): what arrived, what
// was dropped and why, loss and repair, round trips, the distributors heard.
#include "server/backbone/backbone_receiver.h"

namespace mdcast::server {

namespace {

void register_packet_counters(MetricsRegistry& m, const BackboneReceiverCounters& b) {
    m.counter("packets_total", "Backbone datagrams received", [&b] { return b.packets_received; });
    m.counter("bytes_in_total", "Backbone bytes received", [&b] { return b.bytes_received; });
    m.counter("messages_total", "Backbone messages delivered in order",
              [&b] { return b.messages_received; });
    m.counter("messages_reassembled_total",
              "Backbone messages larger than a datagram, put together from their parts",
              [&b] { return b.messages_reassembled; });
    m.counter("message_parts_refused_total",
              "Backbone messages in parts that could not be put together (over "
              "backbone.max_message_bytes, or parts out of place): handled as loss",
              [&b] { return b.message_parts_refused; });
    m.counter("heartbeats_total", "Backbone heartbeats received",
              [&b] { return b.heartbeats_received; });
    m.counter("malformed_packets_total", "Backbone datagrams dropped as malformed",
              [&b] { return b.malformed_packets; });
    m.counter("bad_signatures_total", "Backbone datagrams unsigned or forged, dropped",
              [&b] { return b.bad_signatures; });
    m.counter("source_silences_total",
              "Times a distributor went silent for backbone.source_silent_ms (its items suspect)",
              [&b] { return b.source_silences; });
    m.counter("stalls_total",
              "Times this server found it had not run for a while (paused): sources not blamed",
              [&b] { return b.stalls; });
    m.counter("stale_epochs_total",
              "Backbone datagrams of an older epoch than the distributor's current one, dropped",
              [&b] { return b.stale_epochs; });
    m.counter("foreign_sources_total", "Packets from distributors beyond backbone.max_sources",
              [&b] { return b.foreign_sources; });
    m.counter("repairs_received_total", "Datagrams flagged as retransmissions",
              [&b] { return b.repairs_received; });
    m.counter("coalesced_packets_total",
              "Backbone datagrams that arrived several to a message (UDP_GRO)",
              [&b] { return b.coalesced_packets; });
}

void register_recovery_counters(MetricsRegistry& m,
                                const std::function<LossRecoveryCounters()>& recovery) {
    m.counter("gaps_total", "Backbone gaps detected", [recovery] { return recovery().gaps; });
    m.counter("missing_total", "Backbone packets found missing",
              [recovery] { return recovery().missing_detected; });
    m.counter("repaired_total", "Missing packets that arrived later",
              [recovery] { return recovery().repaired; });
    m.counter("duplicates_total", "Backbone packets received twice",
              [recovery] { return recovery().duplicates; });
    m.counter("out_of_order_total", "Packets held after a gap",
              [recovery] { return recovery().out_of_order; });
    m.counter("naks_total", "NAK messages sent", [recovery] { return recovery().naks_sent; });
    m.counter("nak_sequences_total", "Sequences asked for in NAKs",
              [recovery] { return recovery().nak_sequences; });
    m.counter("unrecoverable_total", "Backbone packets given up",
              [recovery] { return recovery().unrecoverable; });
    m.counter("epoch_changes_total", "Distributor restarts seen",
              [recovery] { return recovery().epoch_changes; });
    m.counter("jumps_refused_total",
              "Packets or heartbeats too far ahead in sequence, not believed (dropped)",
              [recovery] { return recovery().jumps_refused; });
    m.counter("jumps_taken_total", "Far sequence jumps confirmed and taken",
              [recovery] { return recovery().jumps_taken; });
}

}  // namespace

void BackboneReceiver::register_metrics(MetricsRegistry& m) const {
    register_packet_counters(m, counters_);
    register_recovery_counters(m, [this] { return recovery_counters(); });
    m.counter("kernel_drops_total", "Datagrams the kernel dropped on the backbone sockets",
              [this] { return kernel_drops(); });
    m.counter("injected_drops_total", "Packets dropped by testing.loss",
              [this] { return injected_drops(); });
    m.histogram("repair_seconds", "Repair time: loss seen to repair received",
                [this] { return repair_times_.prometheus_seconds(); });
    m.histogram("rtt_seconds", "Round trips to the distributors (control probes)",
                [this] { return round_trips_.prometheus_seconds(); });
    m.gauge("sources", "Distributors heard on the backbone", [this] { return sources_.size(); });
    m.gauge("sources_silent", "Distributors heard before but silent now (their items suspect)",
            [this] {
                size_t silent = 0;
                for (const auto& [id, source] : sources_) silent += source->silent();
                return silent;
            });
}

}  // namespace mdcast::server
