#include "common/daemon/process_metrics.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "common/clock.h"
#include "common/net/accept_guard.h"
#include "proto/field_values.h"

#ifndef MDCAST_COMMIT
#define MDCAST_COMMIT "unknown"
#endif
#ifndef MDCAST_BUILD_TYPE
#define MDCAST_BUILD_TYPE "unknown"
#endif

namespace mdcast {

namespace {

// Seconds since the epoch at which the system booted (btime in /proc/stat).
double boot_time_s() {
    std::ifstream stat("/proc/stat");
    std::string word;
    while (stat >> word) {
        if (word == "btime") {
            double value = 0;
            stat >> value;
            return value;
        }
    }
    return 0;
}

// Field 22 of /proc/self/stat (start time in clock ticks after boot), past the
// parenthesised command name that may hold spaces.
double process_start_s() {
    std::ifstream file("/proc/self/stat");
    std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    const size_t end = text.rfind(')');
    if (end == std::string::npos) return 0;
    std::istringstream fields(text.substr(end + 2));  // from field 3 (state) on
    std::string field;
    for (int i = 3; i < 22 && fields >> field;) ++i;
    double ticks = 0;
    fields >> ticks;
    return boot_time_s() + ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

const BuildInfo& build_info() {
    static const BuildInfo info{MDCAST_VERSION, MDCAST_COMMIT, MDCAST_BUILD_TYPE};
    return info;
}

ProcessStats process_stats() {
    static const double start = process_start_s();
    ProcessStats stats;
    stats.start_time_s = start;
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    stats.cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                  static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    if (std::FILE* statm = std::fopen("/proc/self/statm", "r")) {
        unsigned long long size = 0, resident = 0;
        if (std::fscanf(statm, "%llu %llu", &size, &resident) == 2) {
            const auto page = static_cast<double>(sysconf(_SC_PAGESIZE));
            stats.virtual_bytes = static_cast<double>(size) * page;
            stats.resident_bytes = static_cast<double>(resident) * page;
        }
        std::fclose(statm);
    }
    std::error_code error;
    for (auto it = std::filesystem::directory_iterator("/proc/self/fd", error);
         !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
        ++stats.open_fds;
    }
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0) stats.max_fds = static_cast<double>(limit.rlim_cur);
    return stats;
}

std::string process_info_json() {
    const BuildInfo& build = build_info();
    const ProcessStats process = process_stats();
    const auto start = static_cast<time_t>(process.start_time_s);
    tm utc{};
    gmtime_r(&start, &utc);
    char start_text[32];
    std::strftime(start_text, sizeof start_text, "%Y-%m-%dT%H:%M:%SZ", &utc);
    using proto::json_escape;
    return fmt::format(
        "\"version\":\"{}\",\"commit\":\"{}\",\"build_type\":\"{}\",\"start_time\":\"{}\","
        "\"uptime_s\":{:.1f},\"rss_bytes\":{:.0f},\"cpu_s\":{:.2f}",
        json_escape(build.version), json_escape(build.commit), json_escape(build.build_type),
        start_text, static_cast<double>(realtime_ns()) / 1e9 - process.start_time_s,
        process.resident_bytes, process.cpu_s);
}

std::string config_json(const std::vector<std::pair<std::string, std::string>>& values) {
    std::string out = "{";
    for (const auto& [key, value] : values) {
        const bool secret =
            key.find("password") != std::string::npos || key.find("secret") != std::string::npos;
        out += fmt::format("{}\"{}\":{}", out.size() > 1 ? "," : "", key,
                           secret ? "\"<redacted>\"" : value);
    }
    return out + "}";
}

std::string json_string_list(const std::vector<std::string>& values) {
    std::string out = "[";
    for (const auto& value : values)
        out += (out.size() > 1 ? ",\"" : "\"") + proto::json_escape(value) + "\"";
    return out + "]";
}

void register_process_metrics(MetricsRegistry& m, const std::string& daemon) {
    const BuildInfo& build = build_info();
    m.gauge_unprefixed("mdcast_build_info",
                       "The daemon's version, source commit and build type (always 1)",
                       {{"daemon", daemon},
                        {"version", build.version},
                        {"commit", build.commit},
                        {"build_type", build.build_type}},
                       [] { return 1.0; });
    // One /proc sample per scrape, not one per metric: the registry reads metrics in the order
    // they were registered (metrics.h), so the first refreshes the sample and the others read
    // it. Each sample lists /proc/self/fd, a server's every connection: six of them per scrape
    // stalled the loop six times as long (strace: 6 getrusage and 12 openat per /metrics).
    auto sample = std::make_shared<ProcessStats>();
    m.counter_unprefixed("process_cpu_seconds_total", "User and system CPU time spent, seconds",
                         [sample] {
                             *sample = process_stats();
                             return sample->cpu_s;
                         });
    m.gauge_unprefixed("process_resident_memory_bytes", "Resident memory size, bytes", {},
                       [sample] { return sample->resident_bytes; });
    m.gauge_unprefixed("process_virtual_memory_bytes", "Virtual memory size, bytes", {},
                       [sample] { return sample->virtual_bytes; });
    m.gauge_unprefixed("process_start_time_seconds", "Start time since the Unix epoch, seconds", {},
                       [sample] { return sample->start_time_s; });
    m.gauge_unprefixed("process_open_fds", "Open file descriptors", {},
                       [sample] { return sample->open_fds; });
    m.gauge_unprefixed("process_max_fds", "Limit on open file descriptors", {},
                       [sample] { return sample->max_fds; });
    register_accept_metrics(m);
}

// Listeners of every kind (clients, WebSocket, publishers, admin) out of descriptors.
void register_accept_metrics(MetricsRegistry& m) {
    m.counter("accept_paused_total",
              "Times a listener stopped accepting for want of descriptors (EMFILE, ENFILE) for "
              "100 ms instead of retrying at once",
              [] { return static_cast<double>(AcceptGuard::pauses()); });
    m.counter("accept_dropped_total",
              "Connections accepted with the reserve descriptor while out of descriptors and "
              "closed at once",
              [] { return static_cast<double>(AcceptGuard::dropped()); });
}

}  // namespace mdcast
