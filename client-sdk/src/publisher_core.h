// The publisher's I/O-thread side: the connection to the distributor,
// services and items with their images and sequences, the outbox drain, and
// the interactive conversation (item requests and closes). docs/sdk.md.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "caller_write_gate.h"
#include "common/logging.h"
#include "common/net/event_loop.h"
#include "common/net/flush_scheduler.h"
#include "failover_link.h"
#include "mdcast/publisher.h"
#include "proto/field_image.h"
#include "proto/update_codec.h"
#include "publisher_frame_limit.h"
#include "publisher_outbox.h"
#include "publisher_worker.h"
#include "wire/backbone.pb.h"
#include "wire/client.pb.h"
#include "wire/publisher.pb.h"

namespace mdcast::sdk {

struct PublisherCounters : LinkCounters {
    std::atomic<uint64_t> refreshes_sent{0};
    std::atomic<uint64_t> updates_sent{0};
    std::atomic<uint64_t> statuses_sent{0};
    std::atomic<uint64_t> updates_held{0};
    std::atomic<uint64_t> updates_dropped{0};
    std::atomic<uint64_t> outbox_full{0};
    std::atomic<uint64_t> item_requests{0};
    std::atomic<uint64_t> item_closes{0};
    std::atomic<uint64_t> rejections{0};
    std::atomic<uint64_t> caller_writes{0};
    std::atomic<uint64_t> posts_received{0};
    std::atomic<uint64_t> posts_accepted{0};
    std::atomic<uint64_t> links_dropped{0};
    std::atomic<uint64_t> frames_refused{0};
    std::atomic<uint64_t> images_dropped{0};
};

class PublisherCore final : public PublisherWorker, public FailoverLink::Owner {
  public:
    // `handle_for` returns the handle of (service, item), creating it: the
    // front end owns handle numbering. `stop_loop` ends the I/O thread's loop.
    // `outbox` null: one link of a PublisherFan, which takes the outbox and
    // hands every record to each of its cores (apply_record); such a core
    // never waits for its distributor: past max_output_bytes it drops the
    // link, and the next connection starts again from the images.
    PublisherCore(EventLoop& loop, const PublisherOptions& options, PublisherHandler& handler,
                  PublisherCounters& counters, PublisherOutbox* outbox,
                  std::function<PublishedItem(const std::string&, const std::string&)> handle_for,
                  std::function<void()> stop_loop, std::shared_ptr<const TlsContext> tls = nullptr,
                  std::function<void(uint64_t)> flushed = nullptr);
    ~PublisherCore();

    void start() override;
    void stop(uint32_t drain_ms) override;
    void on_wake() override;
    // A PublisherFan's records: each merged into the images and, when the
    // link is up, framed for it; end_batch() registers new items and hands
    // the framed updates to the connection.
    void apply_record(const OutboxBatch& batch, const OutboxRecord& record);
    void end_batch();
    // Logged in, with over half of max_output_bytes not yet taken by the
    // distributor (the fan waits while every link that is up is).
    bool up() const { return session_up_; }
    bool congested() const;
    // The frame limit the distributor announced at login (publisher_frame_limit.h);
    // 0 while not logged in.
    uint32_t announced_frame_limit() const {
        return link_.up() ? sdk::announced_frame_limit(link_.peer_max_frame_bytes()) : 0;
    }
    // The publishing thread's turn instead of a wake-up (docs/sdk.md,
    // "Publisher threading"), holding the loop's callback lock: when the
    // session is up and nothing waits for the socket, the updates at the head
    // of the outbox are applied and framed here and written with one
    // non-blocking send. True when that was everything; false when the I/O
    // thread must be woken to go on: a record only it handles (any other
    // kind: they need the loop), bytes the kernel did not take (queued for it
    // to flush), or a state this path leaves to it. With `coalesce` (a plain
    // update, not a batch's end) also false while updates come faster than
    // writes (CallerWriteGate): the I/O thread then batches them.
    bool work_from_caller(bool coalesce) override;

    void on_session_up(const wire::v1::LoginResponse& response) override;
    void on_session_frame(const proto::Frame& frame) override;
    bool on_session_down(bool was_up, LinkDown cause) override;
    void on_failing_over(bool, LinkDown) override {}
    void on_connection_event(const ConnectionEvent& event) override;

  private:
    struct Service;
    struct Item {
        PublishedItem handle;
        Service* service = nullptr;
        std::string name;
        uint64_t item_id = 0;  // on the current connection
        uint64_t seq = 0;
        proto::FieldImage image;
        bool has_refresh = false;
        bool requested = false;  // interactive: someone wants it now
        bool ever_registered = false;
        // Dropped for its size (drop_oversize): its closed status goes to every
        // distributor it is registered with until the next refresh.
        bool close_owed = false;
        ItemState state;
        // Broadcast updates published before the item's first registration, in
        // order: Update bodies without item id and sequence, sent after the
        // refresh once the distributor has given the item its id.
        std::vector<std::string> pending;
    };
    struct Service {
        std::string name;
        ServiceMode mode = ServiceMode::kBroadcast;
        uint32_t id = 0;  // on the current connection; 0 until accepted
        // The distributor's proof that this publisher owned the service: sent
        // again after a reconnect, so the new connection may take it from the
        // old one if the distributor has not seen that close yet.
        std::string takeover_token;
        std::vector<Item*> items;
        std::vector<Item*> to_register;
    };

    void work();
    bool caller_round();
    bool apply_caller_updates();
    bool write_caller_updates();
    bool apply(const OutboxBatch& batch, const OutboxRecord& record);
    void register_new_items();
    bool fanned() const { return outbox_ == nullptr; }
    void announce(const Service& service);
    void register_items(Service& service);
    void on_announce_response(const proto::Frame& frame);
    void on_items_registered(const proto::Frame& frame);
    void on_item_request(const proto::Frame& frame);
    void on_item_close(const proto::Frame& frame);
    void on_rejection(const proto::Frame& frame);
    void on_post(const proto::Frame& frame);  // publisher_posts.cpp
    void publish_refresh(Item& item, std::span<const proto::FieldEntry> fields,
                         const ItemState& state, uint8_t domain, std::span<const uint8_t> map);
    void publish_update(Item& item, std::span<const proto::FieldEntry> fields,
                        std::span<const uint8_t> rest, bool book);
    bool apply_to_image(Item& item, const proto::UpdateView& update);
    void hold_until_registered(Item& item, std::span<const uint8_t> rest);
    void send_pending(Item& item);
    void fold_pending(Item& item);
    void send_update(Item& item, std::span<const uint8_t> rest, bool book = false);
    void drop_oversize(Item& item, const std::string& why);
    void drop_refused_frame();
    void note_sent(const Item& item, size_t bytes) {
        if (bytes > largest_sent_.bytes) largest_sent_ = {bytes, item.handle.id};
    }
    void flush_updates();
    void drop_link();
    bool send(proto::FrameType type, const google::protobuf::MessageLite& message);
    void handle_link_frame(const proto::Frame& frame);
    static ItemState record_state(const OutboxBatch& batch, const OutboxRecord& r);
    void want_flush(uint64_t token);
    void send_flush_if_due();
    void on_flush_ack(const proto::Frame& frame);
    void publish_status(Item& item, const ItemState& state);
    void send_refresh(Item& item);
    bool sendable(const Item& item) const;
    void bind(Item& item, uint64_t item_id);
    Item& item_for(PublishedItem handle, Service& service, const std::string& name);
    Item* item_at(uint64_t handle) const {
        return handle < items_.size() ? items_[handle].get() : nullptr;
    }
    void check_drained();
    bool parse(const proto::Frame& frame, google::protobuf::MessageLite& message);

    const PublisherOptions& options_;
    PublisherHandler& handler_;
    PublisherCounters& counters_;
    PublisherOutbox* outbox_;  // null: fanned (apply_record)
    std::function<PublishedItem(const std::string&, const std::string&)> handle_for_;
    std::function<void()> stop_loop_;
    std::shared_ptr<const TlsContext> tls_;  // null: plaintext
    std::shared_ptr<spdlog::logger> log_;
    FlushScheduler flusher_;
    FailoverLink failover_;
    ServerLink& link_;   // failover_'s
    Timer retry_timer_;  // output was full: try again
    Timer drain_timer_;  // stopping: wait for the output to go
    bool session_up_ = false;
    bool stopping_ = false;
    bool output_full_ = false;     // retry_timer_ is running
    CallerWriteGate caller_gate_;  // the last write's span, caller's or I/O thread's
    bool flush_owed_ = false;      // the publishing thread queued bytes the loop must flush
    int64_t drain_deadline_ns_ = 0;
    std::unordered_map<std::string, std::unique_ptr<Service>> services_;
    std::unordered_map<uint32_t, Service*> by_service_id_;
    // Indexed by handle id: the front end numbers handles 1, 2, ... (null: no item).
    std::vector<std::unique_ptr<Item>> items_;
    std::unordered_map<uint64_t, Item*> by_item_id_;
    std::function<void(uint64_t)> flushed_;  // a FlushAck arrived for this token
    uint64_t flush_wanted_ = 0;              // highest token asked for
    uint64_t flush_sent_ = 0;                // highest token sent on this connection
    // Announcements and registrations not yet answered: a Flush waits for them,
    // because their answers send the refreshes and held updates it must cover.
    uint32_t answers_outstanding_ = 0;
    uint64_t pending_bytes_ = 0;  // in every item's `pending`, bounded by max_queued_bytes
    OutboxBatch batch_;           // taken from the outbox, worked through from next_
    size_t next_ = 0;
    proto::UpdateView update_;  // reused: decoding a held update allocates nothing
    std::string out_;           // updates framed since the last flush_updates()
    uint64_t unflushed_updates_ = 0;
    uint32_t frame_limit_ = kDefaultDistributorFrameBytes;  // this connection's distributor's
    // The largest refresh or update frame body sent on this connection, and
    // its item: the one to drop if the distributor closes it frame_too_large.
    struct {
        size_t bytes = 0;
        uint64_t handle = 0;
    } largest_sent_;
};

}  // namespace mdcast::sdk
