// The distributor's end of the backbone: packs framed messages into datagrams,
// numbers them within this run's epoch, multicasts them, keeps them in the
// retransmit window and repairs what servers NAK.
//
// Messages queued during one loop iteration leave together at the flush point
// (natural batching), or after backbone.flush_interval_us: many messages per
// datagram, and the datagrams of one flush in one sendmmsg per group. Heartbeats follow
// the last data at heartbeat_min_us and back off to heartbeat_max_ms while the
// sender is idle, so tail loss is seen within about a millisecond; at least one
// is sent every heartbeat_max_ms even under load, for servers that join late.
// Repairs are multicast (one send heals every server missing the packet), not
// repeated within repair_linger_us, and limited to a retransmit byte rate.
// NAKs are unsigned unless backbone.key_file is set, so one small datagram must
// not buy many repairs: at most max_repairs_per_nak sequences of one NAK are
// looked at, and each NAK source address has its own token bucket of
// repairs_per_source_per_s repairs (one second's burst), so one peer cannot
// spend the retransmit budget that every other server's repairs need. A
// data byte rate limit queues datagrams in a bounded backlog and asks the
// distributor to stop reading publishers while it is full (back-pressure).
#pragma once

#include <bit>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/logging.h"
#include "common/net/datagram_send_batch.h"
#include "common/net/event_loop.h"
#include "common/net/flush_scheduler.h"
#include "common/net/loss_injector.h"
#include "common/net/token_bucket.h"
#include "common/net/udp_socket.h"
#include "distributor/retransmit_window.h"
#include "proto/backbone_packet.h"
#include "proto/limits.h"
#include "proto/packet_signer.h"
#include "wire/backbone.pb.h"

namespace mdcast::distributor {

struct BackboneSenderCounters {
    uint64_t packets_sent = 0;
    uint64_t bytes_sent = 0;
    uint64_t messages_sent = 0;
    uint64_t heartbeats_sent = 0;
    uint64_t send_failures = 0;      // datagrams the kernel refused (socket buffer full)
    uint64_t oversize_messages = 0;  // messages over max_message_bytes, refused
    uint64_t messages_in_parts = 0;  // messages larger than a datagram, sent in parts
    uint64_t message_parts_sent = 0;
    uint64_t naks_received = 0;
    uint64_t nak_sequences = 0;  // sequences asked for
    uint64_t repairs_sent = 0;
    uint64_t repair_bytes = 0;
    uint64_t naks_lingering = 0;          // asked again within repair_linger_us: not re-sent
    uint64_t naks_beyond_window = 0;      // older than the trailing edge: unrecoverable
    uint64_t naks_invalid = 0;            // not sent yet
    uint64_t nak_sequences_over_cap = 0;  // beyond max_repairs_per_nak in one NAK: ignored
    uint64_t repairs_source_limited = 0;  // refused: the NAK source's bucket was empty
    uint64_t retransmit_rate_limited = 0;
    uint64_t data_rate_limited = 0;  // datagrams that waited in the backlog
    uint64_t injected_drops = 0;     // testing.loss on send
};

// While data flows, the heartbeat that would follow it keeps moving later.
// Left to its timer, that timer fires about once per heartbeat_min_us only to
// learn so and re-arm, and each firing that finds the distributor asleep
// wakes it: about 1,000 wake-ups a second, some 15 % of its CPU at 100K
// updates/s on a VM. So a flush that sent data while the heartbeat is less
// than a quarter interval after that data pushes it to one interval after
// it, from the loop pass that is running anyway and after the datagrams are
// out (Timer::postpone: one timerfd_settime per three-quarter interval, no
// wake-up), but never past heartbeat_max_ms after the last heartbeat.
// `last_data`: when the last data was numbered. Returns the new deadline (steady
// ns), or nothing when the timer is left as it is.
std::optional<int64_t> heartbeat_postponed_to(int64_t last_data, int64_t due,
                                              int64_t last_heartbeat, int64_t min_ns,
                                              int64_t max_ns);

class BackboneSender final : public Flushable {
  public:
    struct Settings {
        std::vector<MulticastEndpoint> endpoints;  // every packet goes to each (first: primary)
        uint32_t max_datagram_bytes = proto::kDefaultDatagramBytes;
        uint32_t max_message_bytes = 262144;  // larger than a datagram: in parts
        uint32_t flush_interval_us = 0;
        uint32_t heartbeat_min_us = 1000;
        uint32_t heartbeat_max_ms = 1000;
        uint32_t send_buffer_bytes = 0;
        // Datagrams may be padded so a flush's run goes out in one UDP
        // segmentation offload send (common/net/datagram_send_batch.h).
        bool segmentation_offload = true;
        uint16_t control_port = 0;  // advertised in heartbeats
        uint64_t retransmit_window_bytes = 64 << 20;
        uint32_t retransmit_window_ms = 10000;
        uint32_t repair_horizon_ms = 2000;  // how long servers may ask for a repair
        uint32_t repair_linger_us = 500;
        uint64_t retransmit_rate_bytes_per_s = 0;  // 0: unlimited
        uint32_t max_repairs_per_nak = 1024;       // sequences of one NAK looked at
        uint32_t repairs_per_source_per_s = 0;     // per NAK source address; 0: unlimited
        uint64_t data_rate_bytes_per_s = 0;        // 0: unlimited
        uint64_t max_backlog_bytes = 16 << 20;
        LossSettings send_loss;                // testing only
        const PacketSigner* signer = nullptr;  // sign every packet when set
    };

    // `on_congestion(true)` when the data backlog is full, `(false)` when it drained.
    BackboneSender(EventLoop& loop, const Settings& settings, uint64_t epoch,
                   std::function<void(bool)> on_congestion = {});

    // Queue one framed message; one larger than a datagram goes in parts. Returns
    // false (logged, counted) when it is larger than max_message_bytes.
    bool send_frame(std::span<const uint8_t> frame);
    bool send(proto::FrameType type, const google::protobuf::MessageLite& message);
    size_t max_message_bytes() const { return settings_.max_message_bytes; }
    // Largest frame (header + body) that fits one datagram.
    size_t max_frame_bytes() const {
        return settings_.max_datagram_bytes - proto::kPacketHeaderBytes;
    }

    void flush() override;
    // Flushes `writer` after this sender, at the same flush point.
    void flush_after(Flushable& writer) { flusher_.schedule(writer); }
    // Re-sends what a server asked for (see the class comment for the rules).
    // `source_address`: the NAK's IPv4 source address (host order).
    void on_nak(const ::mdcast::wire::v1::Nak& nak, uint32_t source_address) {
        on_nak(nak, source_address, monotonic_ns());
    }
    // At time `now` (steady ns): the per-source budgets refill with it.
    void on_nak(const ::mdcast::wire::v1::Nak& nak, uint32_t source_address, int64_t now);
    size_t nak_sources() const { return nak_sources_.size(); }

    uint64_t epoch() const { return epoch_; }
    uint64_t next_sequence() const { return next_sequence_; }
    bool congested() const { return congested_; }
    const BackboneSenderCounters& counters() const { return counters_; }
    const RetransmitWindow& window() const { return window_; }
    // True while the primary group's sends use UDP segmentation offload.
    bool segmenting() const { return !batch_senders_.empty() && batch_senders_[0].segmenting(); }
    uint64_t segmented_datagrams() const;
    uint64_t padding_bytes() const;  // zeros the segmented datagrams carried (all groups)

  private:
    void send_packet();
    bool send_in_parts(std::span<const uint8_t> frame);
    bool refuse_oversize(size_t bytes);
    void note_short_window(int64_t now);
    bool send_everywhere(std::span<const uint8_t> datagram);
    void transmit(std::span<const uint8_t> datagram);
    void transmit_unsent();
    void note_transmit(bool sent, size_t bytes);
    void drain_backlog();
    void repair(uint64_t sequence, int64_t now, TokenBucket& source, bool& advertise_edge);
    TokenBucket& nak_source(uint32_t address);
    void on_heartbeat_timer();
    void send_heartbeat(int64_t now);
    void note_data_sent(int64_t now);
    void postpone_heartbeat();

    void note_offload_refusals();

    Settings settings_;
    uint64_t epoch_;
    std::vector<UdpSocket> sockets_;
    std::vector<DatagramBatchSender> batch_senders_;  // one per socket
    std::vector<bool> refusal_logged_;                // one per socket
    FlushScheduler flusher_;
    Timer heartbeat_timer_;
    Timer backlog_timer_;
    proto::PacketBuilder packet_;
    RetransmitWindow window_;
    TokenBucket data_rate_;
    TokenBucket retransmit_rate_;
    std::unordered_map<uint32_t, TokenBucket> nak_sources_;  // bounded: kMaxNakSources
    LossInjector send_loss_;
    // Numbered and kept in the window during this loop pass, sent together at
    // the flush (transmit_unsent). Reused: no allocation per flush.
    std::vector<uint64_t> unsent_;
    std::vector<std::span<const uint8_t>> unsent_datagrams_;
    std::vector<uint8_t> unsent_sent_;  // 1: some group took it
    std::deque<std::vector<uint8_t>> backlog_;
    size_t backlog_bytes_ = 0;
    bool congested_ = false;
    std::function<void(bool)> on_congestion_;
    uint64_t next_sequence_ = 1;
    int64_t last_data_ns_ = 0;
    bool data_since_flush_ = false;  // numbered while the heartbeat timer was pending
    int64_t last_heartbeat_ns_ = 0;
    int64_t heartbeat_interval_ns_;
    BackboneSenderCounters counters_;
    std::shared_ptr<spdlog::logger> log_;
    uint64_t short_evictions_logged_ = 0;  // window short evictions already logged
    log::RateLimiter failure_log_limit_;
};

}  // namespace mdcast::distributor
