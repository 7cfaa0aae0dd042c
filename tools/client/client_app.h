// mdcast-client: the test client (the seed's rmdstestclient). Opens one or
// more connections to a server, subscribes each to the same item list, prints
// what arrives, checks per-item sequence numbers (gaps, duplicates) and
// measures latency from the publish stamp embedded in updates.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/event_loop.h"
#include "common/flush_scheduler.h"
#include "common/latency_histogram.h"
#include "common/logging.h"
#include "item_printer.h"
#include "mdcast/session.h"

namespace mdcast::tools {

struct ClientOptions {
    sdk::SessionOptions session;
    int64_t connections = 1;
    std::string service = "MDCAST";
    std::vector<std::string> items;
    bool snapshot = false;
    std::vector<uint32_t> view;
    double duration_s = 0;     // 0: until SIGINT, --count, or every connection closed
    int64_t count = 0;         // stop after this many updates in all (0: no limit)
    double stats_interval_s = 0;
};

struct ClientTotals {
    uint64_t refreshes = 0;
    uint64_t updates = 0;
    uint64_t statuses = 0;
    uint64_t gaps = 0;          // updates whose sequence skipped ahead
    uint64_t missing = 0;       // sequence numbers skipped
    uint64_t duplicates = 0;    // sequence at or below the last one
    uint64_t unknown_items = 0; // updates for ids never refreshed on that connection
};

class ClientApp final : public sdk::Session::Listener {
public:
    ClientApp(EventLoop& loop, ClientOptions options, ItemPrinter& printer);
    ~ClientApp();
    // Opens every connection; false with `error` when one cannot be made.
    bool start(std::string& error);
    void stop(const std::string& why);
    int exit_code() const { return exit_code_; }

    void on_logged_in(sdk::Session& session, const wire::v1::LoginResponse& response) override;
    void on_session_frame(sdk::Session& session, const proto::Frame& frame) override;
    void on_session_closed(sdk::Session& session, CloseReason reason, const std::string& text) override;

private:
    struct ItemState {
        std::string service;
        std::string name;
        uint64_t last_seq = 0;
    };
    struct Connection {
        std::unique_ptr<sdk::Session> session;
        std::unordered_map<uint64_t, ItemState> items;
        bool closed = false;
    };

    void on_refresh(Connection& connection, int index, const proto::Frame& frame);
    void on_update(Connection& connection, int index, const proto::Frame& frame);
    void on_status(Connection& connection, int index, const proto::Frame& frame);
    void print_stats();
    void print_summary();

    EventLoop& loop_;
    ClientOptions options_;
    ItemPrinter& printer_;
    FlushScheduler flusher_;
    std::vector<Connection> connections_;
    Timer stop_timer_;
    Timer stats_timer_;
    ClientTotals totals_;
    ClientTotals last_stats_;
    LatencyHistogram latency_;
    int64_t started_ns_ = 0;
    int64_t first_image_ns_ = 0;
    int64_t last_image_ns_ = 0;
    int open_connections_ = 0;
    int exit_code_ = 0;
    bool stopping_ = false;
    std::shared_ptr<spdlog::logger> log_;
    wire::v1::Update update_;
};

}  // namespace mdcast::tools
