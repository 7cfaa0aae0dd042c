// The run sequence of the tools that drive the SDK from their own threads
// (mdcast-bench-consumer, mdcast-bench-publisher, mdcast-replay): SIGINT and
// SIGTERM ask them to stop (they poll `stop_requested`), and an exception ends
// the run with "NAME: error: ..." and exit code 2.
#pragma once

#include <atomic>
#include <csignal>
#include <exception>
#include <iostream>

namespace mdcast::tools {

inline std::atomic<bool> stop_requested{false};

template <class Run>
int run_until_stopped(const char* name, Run&& run) {
    std::signal(SIGTERM, [](int) { stop_requested = true; });
    std::signal(SIGINT, [](int) { stop_requested = true; });
    try {
        return run();
    } catch (const std::exception& e) {
        std::cerr << name << ": error: " << e.what() << "\n";
        return 2;
    }
}

}  // namespace mdcast::tools
