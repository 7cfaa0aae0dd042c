// The command line the bench's own clients (mdcast-bench-consumer,
// mdcast-bench-ws-consumer) share: the subset of mdcast-client's that
// mdcast-bench passes to every client (bench_points.py), declared once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/config/command_line.h"
#include "tools/sample_items.h"

namespace mdcast::tools {

struct BenchClientOptions {
    std::string servers = "127.0.0.1:14002";
    int64_t connections = 1;
    std::string service = "MDCAST";
    int64_t item_count = 1000;
    std::string prefix = "ITEM";
    double duration_s = 10;
    double warmup_s = 0;
    double stats_interval_s = 0;
    std::string csv_path;
    std::string user = "mdcast-bench";
    std::string output = "none";  // accepted for mdcast-client compatibility; nothing is printed
};

// Declares the shared options on `command_line`; `servers_help` says which port they name.
inline cli::CommandLine& add_bench_client_options(cli::CommandLine& command_line,
                                                  BenchClientOptions& o,
                                                  const std::string& servers_help) {
    return command_line
        .option("server", &o.servers, "HOST:PORT,...",
                servers_help + "; connection i goes to server i mod count")
        .option("connections", &o.connections, "N", "Connections, each subscribing every item", 1,
                10000)
        .option("service", &o.service, "NAME", "Service of the items")
        .option("item-count", &o.item_count, "N", "Subscribe PREFIX000000 .. PREFIX(N-1)", 1,
                10'000'000)
        .option("item-prefix", &o.prefix, "TEXT", "Prefix of the item names")
        .option("duration", &o.duration_s, "SECONDS", "Run time", 0.1, 1e7)
        .option("warmup", &o.warmup_s, "SECONDS",
                "What arrives before this is start-up, not steady state", 0, 1e7)
        .option("stats-interval", &o.stats_interval_s, "SECONDS", "CSV row interval (0: none)", 0,
                3600)
        .option("csv", &o.csv_path, "FILE", "Write each stats interval as a CSV row to FILE")
        .option("output", &o.output, "FORMAT", "Only none (for mdcast-client compatibility)")
        .option("user", &o.user, "NAME", "User name for the login");
}

inline std::vector<std::string> bench_item_names(const BenchClientOptions& o) {
    std::vector<std::string> names;
    for (int64_t i = 0; i < o.item_count; ++i)
        names.push_back(item_name(o.prefix, static_cast<uint64_t>(i)));
    return names;
}

}  // namespace mdcast::tools
