// mdcast-client: the test client (the seed's rmdstestclient). Opens many
// connections over a list of servers (round-robin), subscribes each to the
// same item list, prints what arrives, checks per-item sequence numbers (gaps,
// duplicates) and measures latency from the publish stamp embedded in updates,
// separately for start-up and steady state.
//
// Cost per update when nothing is printed: one frame header, a three-field
// decode of the Update (update_header.h), a hash lookup, a clock read and a
// histogram increment; no allocation. The field list is parsed only to print.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "client_stats.h"
#include "common/logging.h"
#include "common/net/event_loop.h"
#include "common/net/flush_scheduler.h"
#include "item_printer.h"
#include "item_table.h"
#include "mdcast/session.h"
#include "tools/process_usage.h"

namespace mdcast::tools {

struct ClientOptions {
    sdk::SessionOptions session;  // host/port replaced per connection from `servers`
    std::vector<std::pair<std::string, uint16_t>> servers;  // connection i goes to servers[i % n]
    int64_t connections = 1;
    std::string service = "MDCAST";
    std::vector<std::string> items;
    bool snapshot = false;
    std::vector<uint32_t> view;
    uint32_t conflate_ms = 0;  // at most one update per item per this many ms (0: all)
    double duration_s = 0;     // 0: until SIGINT, --count, or every connection closed
    double warmup_s = 0;       // latency before this counts as start-up, not steady state
    int64_t count = 0;         // stop after this many updates in all (0: no limit)
    double stats_interval_s = 0;
    std::string csv_path;  // stats rows as CSV (empty: none)
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
    void on_session_closed(sdk::Session& session, CloseReason reason,
                           const std::string& text) override;

  private:
    struct Connection {
        std::unique_ptr<sdk::Session> session;
        ItemTable items;
        bool closed = false;
    };

    void on_refresh(Connection& connection, int index, const proto::Frame& frame);
    void on_update(Connection& connection, int index, const proto::Frame& frame);
    void on_status(Connection& connection, int index, const proto::Frame& frame);
    void print_update(Connection& connection, int index, const proto::Frame& frame,
                      int64_t latency_ns);
    void on_stats_timer();
    void print_summary();

    EventLoop& loop_;
    ClientOptions options_;
    ItemPrinter& printer_;
    FlushScheduler flusher_;
    std::vector<Connection> connections_;
    Timer stop_timer_;
    Timer stats_timer_;
    Timer warmup_timer_;
    Timer output_timer_;
    ClientStats stats_;
    CpuMeter cpu_;
    std::FILE* csv_ = nullptr;
    int open_connections_ = 0;
    int exit_code_ = 0;
    bool stopping_ = false;
    std::shared_ptr<spdlog::logger> log_;
    wire::v1::Update update_;  // reused for printing, so parsing does not allocate per update
};

}  // namespace mdcast::tools
