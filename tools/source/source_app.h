// mdcast-source: a publisher that drives load (the seed's sink_driven_src).
//
// Logs in to the distributor, announces one broadcast service, registers N
// items, sends each a refresh, then publishes updates at a paced rate,
// round-robin over the items, each stamped with its publish time.
//
// Names and values are the deterministic samples of tools/sample_items.h, or
// names and static image fields from a sample file (tools/sample_file.h).
// Updates are padded to --update-bytes (update_payload.h); --latency-rate
// stamps only that many per second, at random positions (StampSelector). At the
// end it prints a JSON summary line on stdout.
//
// --books N adds N MarketByPrice books (sample_book.h) to the round-robin: each
// refresh carries the whole book, each update one or two level actions, a trade.
// --print-books prints each book as it stands at the end, one JSON line each,
// before the summary.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/logging.h"
#include "common/net/event_loop.h"
#include "common/net/flush_scheduler.h"
#include "mdcast/session.h"
#include "sample_book.h"
#include "tools/sample_file.h"
#include "update_payload.h"
#include "update_schedule.h"
#include "wire/common.pb.h"

namespace mdcast::tools {

struct SourceOptions {
    sdk::SessionOptions session;
    std::string service = "MDCAST";
    std::string takeover_secret;  // --takeover-secret-file's first line (docs/hardening.md)
    uint32_t standby_rank = 0;    // --standby-rank (docs/operations.md, "Redundancy")
    std::string item_prefix = "ITEM";
    int64_t items = 100;
    int64_t books = 0;  // MarketByPrice books beside the items (sample_book.h)
    std::string book_prefix = "BOOK";
    int64_t book_levels = 10;
    bool print_books = false;  // each book's final state on stdout
    double rate = 1000;        // updates per second over all items
    double duration_s = 10;    // 0: until SIGINT/SIGTERM
    int64_t tick_us = 1000;
    int64_t max_batch = 10000;             // per tick
    bool stamp = true;                     // embed the publish time
    double latency_rate = -1;              // stamps per second (< 0: every update)
    uint64_t seed = 1;                     // for the random choice of stamped updates
    int64_t update_bytes = 0;              // protobuf body size of each update (0: natural)
    int64_t trade_every = 0;               // every Nth update of an item is a trade (0: none)
    std::vector<SampleItem> sample_items;  // from --item-file (empty: generated names)
    std::string sample_file;
    proto::FieldDictionary dictionary;  // types of the sample file's fields
};

class SourceApp final : public sdk::Session::Listener {
  public:
    SourceApp(EventLoop& loop, SourceOptions options);
    // Connects; false with `error` set when the distributor cannot be reached.
    bool start(std::string& error);
    void stop(const std::string& why);
    int exit_code() const { return exit_code_; }

    void on_logged_in(sdk::Session& session, const wire::v1::LoginResponse& response) override;
    void on_session_frame(sdk::Session& session, const proto::Frame& frame) override;
    void on_session_closed(sdk::Session& session, CloseReason reason,
                           const std::string& text) override;

  private:
    struct Item {
        std::string name;
        const SampleItem* sample = nullptr;  // template fields for the refresh
        std::optional<SampleBook> book;      // a book item: its levels
        uint64_t id = 0;
        uint64_t seq = 0;
    };

    void on_announce_response(const proto::Frame& frame);
    void on_items_registered(const proto::Frame& frame);
    void on_item_status(const proto::Frame& frame);
    void begin_publishing();
    void on_tick();
    void publish_one();
    std::span<const uint8_t> encode_book_update(Item& item, uint64_t stamp);
    void fill_book_refresh(const Item& item, wire::v1::Refresh& refresh) const;
    void print_books() const;
    void report(spdlog::level::level_enum level);
    void print_summary();
    void drain();

    EventLoop& loop_;
    SourceOptions options_;
    FlushScheduler flusher_;
    sdk::Session session_;
    Timer tick_timer_;
    Timer stop_timer_;
    Timer drain_timer_;
    int64_t drain_deadline_ns_ = 0;
    UpdateSchedule schedule_;
    StampSelector stamps_;
    UpdateEncoder encoder_;
    std::string book_map_;    // reused for each book update's Map
    std::string book_frame_;  // and its frame
    std::vector<Item> items_;
    uint32_t service_id_ = 0;
    std::string takeover_token_;  // proof of ownership, sent again after a reconnect
    size_t registered_ = 0;
    size_t next_item_ = 0;
    int64_t started_ns_ = 0;
    uint64_t rejected_ = 0;
    int exit_code_ = 0;
    bool stopping_ = false;
    std::shared_ptr<spdlog::logger> log_;
};

}  // namespace mdcast::tools
