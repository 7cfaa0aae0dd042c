// mdcast-source: paced load publisher (see source_app.h).
#include <iostream>

#include "common/command_line.h"
#include "common/host_port.h"
#include "source_app.h"
#include "tools/tool_main.h"

int main(int argc, char** argv) {
    using namespace mdcast;
    tools::SourceOptions options;
    std::string distributor = "127.0.0.1:14001";
    std::string log_level = "info";
    int verbosity = 0;
    bool no_stamp = false;
    cli::CommandLine command_line(
        "mdcast-source",
        "Publishes N items to mdcast-distributor at a paced update rate, each update stamped "
        "with its publish time (CLOCK_REALTIME) for latency measurement. Values are a "
        "deterministic function of item and sequence (see docs/tools.md).");
    command_line.option("distributor", &distributor, "HOST:PORT", "Distributor publisher port")
        .option("service", &options.service, "NAME", "Service to announce")
        .option("item-prefix", &options.item_prefix, "TEXT", "Item names are PREFIX000000, ...")
        .option("items", &options.items, "N", "Number of items", 1, 10'000'000)
        .option("rate", &options.rate, "PER_SEC", "Updates per second over all items", 0, 1e8)
        .option("duration", &options.duration_s, "SECONDS", "Run time (0: until SIGINT)", 0, 1e7)
        .option("tick-us", &options.tick_us, "MICROS", "Pacing tick", 10, 1'000'000)
        .option("max-batch", &options.max_batch, "N", "Most updates sent in one tick", 1, 10'000'000)
        .flag("no-stamp", &no_stamp, "Do not embed publish timestamps")
        .option("user", &options.session.user, "NAME", "User name for the login")
        .option("log-level", &log_level, "LEVEL", "trace, debug, info, warn, error")
        .counter('v', "verbose", &verbosity, "More logging");
    const auto outcome = command_line.parse(argc, argv, std::cout, std::cerr);
    if (outcome != cli::CommandLine::Outcome::kRun) {
        return outcome == cli::CommandLine::Outcome::kExitSuccess ? 0 : 2;
    }
    HostPort endpoint;
    if (!parse_host_port(distributor, endpoint)) {
        std::cerr << "mdcast-source: error: --distributor must be HOST:PORT, got '" << distributor << "'\n";
        return 2;
    }
    options.session.host = endpoint.host;
    options.session.port = endpoint.port;
    options.stamp = !no_stamp;
    options.session.application_id = "mdcast-source";
    return tools::run_tool<tools::SourceApp>("mdcast-source", log_level, verbosity, [&](EventLoop& loop) {
        return std::make_unique<tools::SourceApp>(loop, options);
    });
}
