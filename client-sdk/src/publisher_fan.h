// A dual-homed Publisher's I/O side (PublisherOptions::publish_to_all): one
// PublisherCore per distributor, each with its own link, reconnect schedule,
// images and sequences, all fed the same records in the same order. The fan
// takes the outbox once and hands every batch to each core, so the images and
// the per-item sequences are the same on every distributor, and a server that
// switches between them (a redundancy group) sees one stream.
//
// A link's loss is the application's connection event for that distributor;
// the others go on. The fan goes at the pace of the fastest distributor: it
// waits (millisecond steps, the outbox filling towards the application) only
// while every link that is up has over half of max_output_bytes not yet
// taken. A slower link's queue grows; past max_output_bytes the link is
// dropped (logged as an error, counted in links_dropped) and, when it
// connects again, every item is re-published from its image. Item requests
// and posts are answered on the link they came from; the application's
// callbacks are the same, with the rules of PublisherLinkSet for item closes
// and flushes. docs/sdk.md, "Publishing to two distributors".
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "publisher_core.h"
#include "publisher_link_set.h"

namespace mdcast::sdk {

class PublisherFan final : public PublisherWorker {
  public:
    // As PublisherCore's, for every address in options.distributors.
    PublisherFan(EventLoop& loop, const PublisherOptions& options, PublisherHandler& handler,
                 PublisherCounters& counters, PublisherOutbox& outbox,
                 std::function<PublishedItem(const std::string&, const std::string&)> handle_for,
                 std::function<void()> stop_loop, std::shared_ptr<const TlsContext> tls,
                 std::function<void(uint64_t)> flushed);
    ~PublisherFan() override;

    void start() override;
    void stop(uint32_t drain_ms) override;
    void on_wake() override;
    bool work_from_caller(bool) override { return false; }  // the I/O thread writes

  private:
    class LinkHandler;
    void work();
    bool congested() const;
    void drain();
    void acknowledged(uint64_t token);
    void core_stopped(size_t link);
    void apply_frame_limit();

    PublisherHandler& handler_;
    PublisherOutbox& outbox_;
    std::function<void()> stop_loop_;
    std::function<void(uint64_t)> flushed_;
    PublisherLinkSet links_;
    std::vector<bool> stopped_;  // each core has drained and closed
    // One distributor each: the cores keep references to their options.
    std::vector<std::unique_ptr<PublisherOptions>> link_options_;
    std::vector<std::unique_ptr<LinkHandler>> handlers_;
    std::vector<std::unique_ptr<PublisherCore>> cores_;
    OutboxBatch batch_;  // taken from the outbox, handed to the cores from next_
    size_t next_ = 0;
    Timer retry_timer_;  // every link was congested: try again
    Timer drain_timer_;  // stopping: the outbox first, then the cores
    bool stopping_ = false;
    int64_t drain_deadline_ns_ = 0;
};

}  // namespace mdcast::sdk
