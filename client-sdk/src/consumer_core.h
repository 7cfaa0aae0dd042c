// The consumer's I/O-thread side: the items the application subscribed to,
// the connection to the current server, failover, and turning frames into
// events (docs/sdk.md).
//
// Owns every item's state: its handle, names, view, the item id the current
// server gave it, and its sequence guard. Lives and dies on the I/O thread;
// the Consumer front end reaches it only through IoThread::post().
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/logging.h"
#include "common/net/event_loop.h"
#include "common/net/flush_scheduler.h"
#include "common/net/spin_poll.h"
#include "consumer_posts.h"
#include "event_writer.h"
#include "failover_link.h"
#include "item_id_index.h"
#include "item_sequencer.h"
#include "mdcast/consumer.h"
#include "proto/field_image.h"
#include "proto/update_codec.h"
#include "wire/client.pb.h"
#include "wire/common.pb.h"

namespace mdcast::sdk {

// Where events go: straight to the handler, or into the dispatch queue.
class EventSink {
  public:
    // The event to fill for `handle` (0: not an item event); nullptr drops it.
    virtual Event* acquire(ItemHandle handle) = 0;
    virtual void commit() = 0;
    // True when commit() hands the event to the application at once: it may
    // then point at the item's names and the received bytes instead of copying.
    virtual bool delivers_at_once() const = 0;

  protected:
    ~EventSink() = default;
};

struct ConsumerCounters : LinkCounters {
    std::atomic<uint64_t> refreshes{0};
    std::atomic<uint64_t> updates{0};
    std::atomic<uint64_t> statuses{0};
    std::atomic<uint64_t> group_statuses{0};
    std::atomic<uint64_t> duplicates_dropped{0};
    std::atomic<uint64_t> catch_ups{0};
    std::atomic<uint64_t> posts_sent{0};
    std::atomic<uint64_t> posts_accepted{0};
};

struct SubscribeRequest {
    std::vector<ItemHandle> handles;  // one per item
    std::string service;
    std::vector<std::string> items;
    bool snapshot = false;
    std::vector<uint32_t> view;  // sorted, unique; empty: all fields
    uint32_t conflate_ms = 0;    // at most one update per item per this many ms (0: all)
};

class ConsumerCore final : public FailoverLink::Owner {
  public:
    // `finished` is called (on the I/O thread) when a handle will produce no
    // more events: unsubscribed, stream closed, or snapshot answered.
    ConsumerCore(EventLoop& loop, const ConsumerOptions& options, EventSink& sink,
                 ConsumerCounters& counters, std::function<void(ItemHandle)> finished,
                 std::function<void()> stop_loop, std::shared_ptr<const TlsContext> tls = nullptr);
    ~ConsumerCore();

    void start();
    void stop();
    void subscribe(const SubscribeRequest& request);
    void unsubscribe(ItemHandle handle);
    void request_directory();
    // Sends `post` (on-stream with `handle`: the item's id on this connection
    // is filled in) and keeps `done` for its answer; refuses it at once
    // when the item is not open here or no session is up.
    void post(ItemHandle handle, wire::v1::Post& post, PostDone done);

    void on_session_up(const wire::v1::LoginResponse& response) override;
    void on_session_frame(const proto::Frame& frame) override;
    bool on_session_down(bool was_up, LinkDown cause) override;
    void on_failing_over(bool was_up, LinkDown cause) override;
    void on_connection_event(const ConnectionEvent& event) override;

  private:
    // What every update reads (the handle and the sequencer) comes first, 48
    // bytes together: with thousands of items per connection, and many
    // connections on one thread, the items are mostly out of cache, and each
    // line an update touches is a miss (the update path's costliest loads).
    // Not alignas(64): the aligned allocations then fell at a regular stride
    // and the consumer's CPU per update rose by half (docs/sdk-performance.md).
    struct Item {
        ItemHandle handle;
        ItemSequencer sequencer;
        uint64_t item_id = 0;  // on the current connection; 0 until known
        std::string service;
        std::string name;
        std::string key;  // service '\0' name
        bool snapshot = false;
        uint32_t service_id = 0;  // from the server, with item_id
        std::vector<uint32_t> view;
        uint32_t conflate_ms = 0;
        proto::FieldImage held;  // a fresh image waiting to catch up (failover)
        ItemState held_state;
    };
    // The requests waiting on one (service, name).
    struct Names {
        Item* streaming = nullptr;
        std::deque<Item*> snapshots;  // answered in the order asked
    };
    // The key of by_name_: service '\0' name.
    static std::string item_key(const std::string& service, const std::string& name);

    void send_subscribe(const std::vector<Item*>& items);
    void refuse_unsendable(Item& item, size_t max_body_bytes);
    void on_update(const proto::Frame& frame);
    bool decode_held_fields();
    void hold_update(Item& item);
    bool take_image(proto::FieldImage& image);
    void on_refresh(const proto::Frame& frame);
    void on_item_status(const proto::Frame& frame);
    void on_group_status(const proto::Frame& frame);
    void on_directory(const proto::Frame& frame);
    void apply_status(Item& item, const ItemState& state);
    void refuse_orphan(const wire::v1::Refresh& refresh);
    void bind(Item& item, uint64_t item_id, uint32_t service_id);
    void finish(Item& item);
    void mark_all_suspect(StatusCode code, const std::string& text);
    void on_housekeeping();
    void emit_connection(ConnectionState state, const std::string& text);
    template <class Fill>
    void emit(ItemHandle handle, Fill&& fill);
    detail::EventWriter::ItemRef ref(const Item& item) const;
    uint64_t read_time_ns() const;
    uint64_t now_ns() const;
    void sample_clock_offset();

    EventLoop& loop_;
    const ConsumerOptions& options_;
    EventSink& sink_;
    const bool borrow_;  // sink_.delivers_at_once(), asked once rather than per event
    ConsumerCounters& counters_;
    std::function<void(ItemHandle)> finished_;
    std::function<void()> stop_loop_;
    std::shared_ptr<const TlsContext> tls_;  // null: plaintext
    std::shared_ptr<spdlog::logger> log_;
    FlushScheduler flusher_;
    FailoverLink failover_;
    ServerLink& link_;  // failover_'s
    Timer housekeeping_;
    SpinPoll spinner_;                         // options_.busy_poll_us
    int64_t realtime_minus_monotonic_ns_ = 0;  // sampled every housekeeping tick
    bool session_up_ = false;
    bool stopped_ = false;
    bool directory_wanted_ = false;
    std::unordered_map<uint64_t, std::unique_ptr<Item>> items_;  // by handle
    ItemIdIndex<Item> by_id_;  // streaming items on the current connection
    std::unordered_map<std::string, Names> by_name_;
    std::unordered_set<Item*> holding_;
    // Reused for every message: no allocation per update once warm.
    proto::UpdateView update_;
    wire::v1::Refresh refresh_;
    proto::FieldImage image_;  // a refresh's fields, as the event is built from them
    std::string key_;
    ConsumerPosts posts_;
};

}  // namespace mdcast::sdk
