// What the server needs from whatever feeds it, and nothing more: the items'
// messages in order, each source's state (ready, silent, restarted, loss it
// could not repair), the means to ask upstream (images, directories, interest
// in interactive items) and its own figures. The multicast backbone
// (server/backbone/backbone_receiver.h) is the first implementation; another,
// such as a TCP link to a parent server, plugs in here without touching the
// fan-out, the cache or the sessions.
//
// A source is one distributor, told apart by the 16-bit id that also sits in
// the top bits of every item and service id it assigns (proto/source_ids.h).
// Repair is the upstream's own business: the server only hears of loss that
// could not be repaired.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/metrics.h"
#include "proto/frame.h"
#include "wire/backbone.pb.h"
#include "wire/post.pb.h"

namespace mdcast::server {

class Upstream {
  public:
    // What the upstream tells the server; every event names its source.
    class Handler {
      public:
        // An item message (refresh, update, item status, directory), in the
        // source's order, exactly once. `frame.whole` may be forwarded as is.
        virtual void on_upstream_message(uint16_t source, const proto::Frame& frame) = 0;
        // Messages of the source are lost for good: any of its items may have
        // missed updates. `what` says which, for the statuses subscribers get.
        virtual void on_source_loss(uint16_t source, const std::string& what) = 0;
        // A new epoch (previous 0: first heard). Item ids of the old epoch are void.
        virtual void on_source_reset(uint16_t source, uint64_t previous_epoch, uint64_t epoch) = 0;
        // The source can be asked now (request_image, query_directory, send_interest).
        virtual void on_source_ready(uint16_t source) = 0;
        // Nothing heard from the source for a while (true), or heard again (false).
        virtual void on_source_silent(uint16_t source, bool silent) = 0;
        // An answer the source sent to this server alone: an ItemStatus saying a
        // name this server asked for is not found.
        virtual void on_source_answer(uint16_t source, const proto::Frame& frame) = 0;
        // The answer to a post this server sent the source (send_post), by the
        // server's post id.
        virtual void on_source_post_ack(uint16_t source,
                                        const ::mdcast::wire::v1::PostAck& ack) = 0;
        // The sequence of the item's image held here, when that image is
        // valid (nullopt: none): what a resync may ask the upstream to confirm.
        virtual std::optional<uint64_t> held_sequence(uint64_t item_id) const {
            return std::nullopt;
        }

      protected:
        virtual ~Handler() = default;
    };

    virtual ~Upstream() = default;

    // Every source heard, ready or not.
    virtual std::vector<uint16_t> sources() const = 0;
    virtual bool ready(uint16_t source) const = 0;
    // True for a source not heard (or not heard of).
    virtual bool silent(uint16_t source) const = 0;

    // Requests, queued for the source and sent at the end of the loop
    // iteration. False when the source cannot be asked now (not ready).
    virtual bool request_image(uint16_t source,
                               const ::mdcast::wire::v1::ImageRequest& request) = 0;
    virtual bool query_directory(uint16_t source) = 0;
    // Interest in interactive items; the upstream stamps the source's epoch.
    virtual bool send_interest(uint16_t source, ::mdcast::wire::v1::Interest& interest) = 0;
    // A client's post for the source's publisher; the upstream stamps the
    // server's identity. False when it cannot be sent (not ready, too large):
    // it is never queued for later. Delivery is not guaranteed: the answer
    // comes back through on_source_post_ack, or never (the server times out).
    virtual bool send_post(uint16_t source, ::mdcast::wire::v1::Post& post) = 0;

    // True when only the items asked for flow (a parent server over TCP,
    // server/cascade/): every item is then held and released as an item of an
    // interactive service is, whatever its service's mode.
    virtual bool interest_based() const { return false; }

    // Why the server cannot serve current data now, for /healthz; empty when it
    // can. The default speaks of distributors heard on a backbone.
    virtual std::string unhealthy_reason() const {
        const auto heard = sources();
        if (heard.empty()) return "no distributor heard on the backbone yet";
        for (uint16_t source : heard) {
            if (!silent(source)) return {};
        }
        return "every distributor is silent";
    }

    // Declares the upstream's counters, gauges and histograms in the server's
    // registry (read by /metrics and the counters log line).
    virtual void register_metrics(MetricsRegistry& metrics) const = 0;
};

}  // namespace mdcast::server
