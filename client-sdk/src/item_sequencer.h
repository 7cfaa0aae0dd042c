// Per-item sequence guard of the consumer: decides, for every refresh and
// update that arrives, whether the application sees it, so that no update is
// delivered twice or out of order — also across a failover to a server whose
// image of the item is a little behind or ahead of the one that was lost.
//
// Rules (docs/sdk.md, "Sequence numbers"):
// - A refresh sets the base; updates are delivered while their sequence is
//   above the last one delivered, and dropped otherwise (duplicates).
// - After a failover the item waits for a fresh image; updates before it are
//   dropped. A fresh image at or beyond the last delivered sequence is
//   delivered. An older one is held: the new server's updates are merged into
//   it (by the caller) until it reaches the last delivered sequence, and then
//   it is delivered as the refresh. If it has not caught up within the catch-up
//   timeout it is delivered as it is (the source must have restarted the item).
// - After a source reset the publisher may restart the item's sequence: the
//   next refresh is accepted whatever its sequence.
// Pure logic: the caller keeps the held image and the clock.
#pragma once

#include <cstdint>

namespace mdcast::sdk {

class ItemSequencer {
  public:
    enum class Verdict {
        kDeliver,  // hand it to the application
        kDrop,     // duplicate, stale, or no image to apply it to
        kHold,     // keep (refresh) or merge into the held image (update)
        kRelease,  // merge into the held image, which is now current: deliver it
    };

    Verdict on_refresh(uint64_t seq, int64_t now_ns);
    // Inline: called for every update received.
    Verdict on_update(uint64_t seq) {
        if (holding_) return on_update_holding(seq);
        if (awaiting_image_ || !has_base_ || seq <= last_) return Verdict::kDrop;
        last_ = seq;
        return Verdict::kDeliver;
    }
    // The connection carrying the item was lost; a fresh image must follow.
    void on_connection_lost();
    // The source restarted: its next refresh may start a new sequence.
    void on_source_reset();
    // True (and the hold ends) when a held image has waited `timeout_ns`: the
    // caller delivers it as it is, at held_seq().
    bool hold_expired(int64_t now_ns, int64_t timeout_ns);

    bool holding() const { return holding_; }
    bool awaiting_image() const { return awaiting_image_; }
    uint64_t held_seq() const { return held_seq_; }
    uint64_t last_delivered() const { return last_; }
    bool has_base() const { return has_base_; }

  private:
    void deliver_base(uint64_t seq);
    Verdict on_update_holding(uint64_t seq);

    bool has_base_ = false;
    bool awaiting_image_ = false;  // failover: no update until a fresh image
    bool holding_ = false;
    uint64_t last_ = 0;
    uint64_t held_seq_ = 0;
    int64_t hold_since_ns_ = 0;
};

}  // namespace mdcast::sdk
