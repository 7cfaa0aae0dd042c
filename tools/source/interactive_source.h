// mdcast-source --interactive: the sink-driven source of the seed's capacity
// tests (sink_driven_src), built on the SDK's Publisher (libmdcast).
//
// It announces its service as interactive and publishes nothing until asked.
// Each item request from the distributor (a subscriber somewhere wants the
// item) is answered with the item's image from the item file or the generated
// samples, or a closed NOT_FOUND status for a name it does not have. Updates
// go out at the configured rate over the items that have interest only,
// round-robin, so the rate is spread over them; an item the distributor closes
// (nobody wants it any more) gets no more updates until it is requested again.
// While no item has interest nothing is owed: the pacing does not build up a
// burst for the first request.
//
// Threads: Publisher callbacks run on its I/O thread and only queue interest
// changes (under a mutex, a few per request); everything about items, pacing
// and publishing happens on the tool's event loop, every --tick-us.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/logging.h"
#include "common/net/event_loop.h"
#include "mdcast/publisher.h"
#include "sample_field_list.h"
#include "source_app.h"
#include "update_schedule.h"

namespace mdcast::tools {

class InteractiveSourceApp final : public PublisherHandler {
  public:
    // `publisher` carries the distributor list, credentials and TLS.
    InteractiveSourceApp(EventLoop& loop, SourceOptions options, PublisherOptions publisher);
    ~InteractiveSourceApp() override;
    bool start(std::string& error);
    void stop(const std::string& why);
    int exit_code() const { return exit_code_; }

    // PublisherHandler: on the Publisher's I/O thread.
    void on_connection(const ConnectionEvent& event) override;
    void on_service(const std::string& service, bool accepted, const std::string& text) override;
    void on_item_request(PublishedItem handle, const std::string& service,
                         const std::string& item) override;
    void on_item_closed(PublishedItem handle, const std::string& service,
                        const std::string& item) override;
    void on_item_rejected(PublishedItem handle, const ItemState& state) override;

  private:
    static constexpr size_t kNotOpen = ~size_t{0};
    struct Item {
        std::string name;
        const SampleItem* sample = nullptr;  // template fields for the refresh
        PublishedItem handle;
        uint64_t seq = 0;           // the Publisher's sequence: refresh n, updates n + 1, ...
        size_t open_at = kNotOpen;  // position in open_
    };
    struct InterestChange {
        PublishedItem handle;
        std::string name;
        bool wanted;  // requested (true) or closed (false)
    };

    void on_tick();
    void apply_interest_changes();
    void open_item(PublishedItem handle, const std::string& name);
    void close_item(const std::string& name);
    void send_image(Item& item, size_t index);
    bool publish_one();
    void print_summary();

    EventLoop& loop_;
    SourceOptions options_;
    PublisherOptions publisher_options_;
    std::unique_ptr<Publisher> publisher_;
    Timer tick_timer_;
    Timer stop_timer_;
    UpdateSchedule schedule_;
    StampSelector stamps_;
    SampleUpdateBuilder updates_;
    FieldList fields_;  // reused for every update
    std::vector<Item> items_;
    std::unordered_map<std::string, size_t> by_name_;
    std::vector<size_t> open_;  // indices of the items with interest, in no order
    size_t next_open_ = 0;

    std::mutex changes_mutex_;
    std::vector<InterestChange> changes_;  // from the I/O thread, applied at the next tick
    std::vector<InterestChange> applying_;
    std::atomic<bool> refused_{false};
    std::atomic<uint64_t> rejected_{0};

    uint64_t requests_ = 0;
    uint64_t closes_ = 0;
    uint64_t not_found_ = 0;
    uint64_t idle_owed_ = 0;  // updates the rate allowed while no item had interest
    int64_t started_ns_ = 0;
    int64_t first_request_ns_ = 0;  // publishing began: the summary's rate is over the time since
    int exit_code_ = 0;
    bool stopping_ = false;
    std::shared_ptr<spdlog::logger> log_;
};

}  // namespace mdcast::tools
