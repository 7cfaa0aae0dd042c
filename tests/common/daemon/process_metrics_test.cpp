// The process_* metrics: read from one /proc sample per scrape, refreshed by
// every scrape (never a stale one), and in agreement with process_stats().
#include "common/daemon/process_metrics.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <regex>
#include <string>
#include <vector>

using namespace mdcast;

namespace {

double value_of(const std::string& exposition, const std::string& name) {
    std::smatch match;
    const std::regex line("(^|\\n)" + name + " (\\S+)\\n");
    REQUIRE(std::regex_search(exposition, match, line));
    return std::stod(match[2].str());
}

}  // namespace

TEST_CASE("every scrape takes a fresh sample of the process", "[process_metrics]") {
    MetricsRegistry metrics("mdcast_test_");
    register_process_metrics(metrics, "test");
    const double before = value_of(metrics.prometheus(), "process_open_fds");
    std::vector<int> fds(20);
    for (auto& fd : fds) fd = dup(STDERR_FILENO);
    const std::string after = metrics.prometheus();
    for (int fd : fds) close(fd);
    CHECK(value_of(after, "process_open_fds") >= before + 20);
    CHECK(value_of(metrics.prometheus(), "process_open_fds") <= before + 2);
}

TEST_CASE("the sample agrees with process_stats", "[process_metrics]") {
    MetricsRegistry metrics("mdcast_test_");
    register_process_metrics(metrics, "test");
    const std::string text = metrics.prometheus();
    const ProcessStats stats = process_stats();
    CHECK(value_of(text, "process_max_fds") == stats.max_fds);
    CHECK(value_of(text, "process_start_time_seconds") == Approx(stats.start_time_s));
    CHECK(value_of(text, "process_cpu_seconds_total") <= stats.cpu_s + 1e-3);
    CHECK(value_of(text, "process_resident_memory_bytes") > 0);
    // The log line and /stats read the same way, in registration order.
    CHECK(metrics.log_line().find("process_open_fds=") != std::string::npos);
    CHECK(metrics.json().find("\"process_virtual_memory_bytes\":") != std::string::npos);
}
