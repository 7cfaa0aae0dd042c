// "Backbone out": what the distributor needs from whatever carries its
// messages to the servers, and what it hears back from them. The multicast
// backbone (distributor/multicast_backbone.h) is the first implementation; a
// second one is added here and in make_backbone_out(), without touching the
// publisher sessions, the item registry, the image service or the interest
// leases, which see only this interface.
//
// Rules every implementation keeps:
//  - send() and send_frame() queue one message for every server; what is queued
//    during one loop pass leaves together at the flush point (natural batching).
//    Messages reach every server in the order they were queued, or the server
//    learns they are lost for good (reliable delivery, repairs and heartbeats are
//    the transport's business: the distributor never sees a NAK).
//  - An answer meant for one server alone (a NOT_FOUND for a name it asked for)
//    is returned by the handler; the transport knows where that server is. The
//    distributor knows servers only by their ServerId, never by an address.
//  - While the transport cannot take more (its backlog is full), it says so
//    (on_congestion(true)) and the distributor stops reading publishers until
//    on_congestion(false): back-pressure, not unbounded memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "common/metrics.h"
#include "common/net/event_loop.h"
#include "common/net/flush_scheduler.h"
#include "proto/frame.h"
#include "wire/backbone.pb.h"
#include "wire/common.pb.h"

namespace mdcast::distributor {

struct DistributorConfig;

// A server, as the distributor knows it: the server_id of its control messages
// (proto/server_id.h), or, from a server that sends none, a key the transport
// derives from its own address for it. Interest leases are keyed by it.
using ServerId = uint64_t;

class BackboneOut {
  public:
    // The distributor, as the backbone sees it: what servers ask for.
    class Handler {
      public:
        // A server wants the image of an item. Answers every server may use go
        // out with send(); an answer for the asker alone is returned and the
        // backbone delivers it to that server only.
        virtual std::optional<::mdcast::wire::v1::ItemStatus> on_image_request(
            const ::mdcast::wire::v1::ImageRequest& request, ServerId from) = 0;
        // A server (joining, or after a reset) wants the service directory.
        virtual void on_directory_query() = 0;
        // A server renews or releases its interest in interactive items.
        virtual void on_interest(const ::mdcast::wire::v1::Interest& interest, ServerId from) = 0;
        // The backbone's backlog is full (true) or drained again (false).
        virtual void on_congestion(bool congested) = 0;

      protected:
        virtual ~Handler() = default;
    };

    virtual ~BackboneOut() = default;

    // Queues one message for every server. False when it can never be carried
    // (larger than max_frame_bytes()): refused and counted, nothing queued.
    virtual bool send(proto::FrameType type, const google::protobuf::MessageLite& message) = 0;
    // The same, for a frame already encoded (a publisher's update, forwarded as
    // the exact bytes it encoded: encode once, fan out bytes).
    virtual bool send_frame(std::span<const uint8_t> frame) = 0;
    // Largest frame (header + body) one message may be; publishers are told it.
    virtual size_t max_frame_bytes() const = 0;
    // Sends everything queued now (shutdown: nothing is left behind).
    virtual void flush() = 0;
    // Flushes `writer` at this transport's flush point, after the messages
    // queued so far leave (the hop probe: its flush is their send time).
    virtual void flush_after(Flushable& writer) = 0;

    // This run's epoch: item ids are of it; servers see a restart by a new one.
    virtual uint64_t epoch() const = 0;
    virtual bool congested() const = 0;
    // Its counters and gauges, into the distributor's registry (/metrics).
    virtual void register_metrics(MetricsRegistry& metrics) const = 0;
    // For the start-up log line: where the messages go and where answers come in.
    virtual std::string describe() const = 0;
};

// The backbone the configuration names (today: always the multicast backbone).
// Throws std::runtime_error naming what failed to bind or load.
std::unique_ptr<BackboneOut> make_backbone_out(EventLoop& loop, const DistributorConfig& config,
                                               uint64_t epoch, BackboneOut::Handler& handler);

}  // namespace mdcast::distributor
