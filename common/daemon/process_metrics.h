// What a daemon says about itself: its build (version, commit, build type) and
// its process (start time, CPU, memory, descriptors), read from /proc when asked.
// register_process_metrics() exports them as `mdcast_build_info` and the standard
// `process_*` metrics every Prometheus client library exports, so dashboards and
// alerts written for those work unchanged; /info shows the same values.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/metrics.h"

namespace mdcast {

struct BuildInfo {
    std::string version;     // the project version (CMake)
    std::string commit;      // git commit of the source tree at configure time, or "unknown"
    std::string build_type;  // CMAKE_BUILD_TYPE
};
const BuildInfo& build_info();

struct ProcessStats {
    double start_time_s = 0;  // since the Unix epoch
    double cpu_s = 0;         // user + system
    double resident_bytes = 0;
    double virtual_bytes = 0;
    double open_fds = 0;
    double max_fds = 0;
};
// The current values; start_time_s is that of the process (from /proc/self/stat).
ProcessStats process_stats();

// The members /info starts with (no braces): "version", "commit", "build_type",
// "start_time" (ISO 8601 UTC), "uptime_s", "rss_bytes", "cpu_s".
std::string process_info_json();
// {"key":value,...} of a daemon's effective configuration from Schema::json_values()
// (each value JSON of its key's type, encoded once); keys that would hold a secret
// (…password…, …secret…) are shown as "<redacted>". No key holds one today: secrets
// live in the files the keys name, shown by path only.
std::string config_json(const std::vector<std::pair<std::string, std::string>>& values);

// ["a","b"]
std::string json_string_list(const std::vector<std::string>& values);

// mdcast_build_info{daemon, version, commit, build_type} 1 and process_cpu_seconds_total,
// process_resident_memory_bytes, process_virtual_memory_bytes, process_start_time_seconds,
// process_open_fds, process_max_fds.
void register_process_metrics(MetricsRegistry& metrics, const std::string& daemon);
// accept_paused_total and accept_dropped_total (AcceptGuard), with the daemon's prefix.
void register_accept_metrics(MetricsRegistry& metrics);

}  // namespace mdcast
