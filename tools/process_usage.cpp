#include "tools/process_usage.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

namespace mdcast::tools {

ProcessUsage process_usage() {
    ProcessUsage usage;
    rusage r{};
    getrusage(RUSAGE_SELF, &r);
    usage.cpu_s = static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
                  static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
    usage.max_rss_mb = static_cast<double>(r.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB
    // Current RSS: the second field of /proc/self/statm, in pages.
    if (std::FILE* statm = std::fopen("/proc/self/statm", "r")) {
        unsigned long long size = 0, resident = 0;
        if (std::fscanf(statm, "%llu %llu", &size, &resident) == 2) {
            usage.rss_mb = static_cast<double>(resident) *
                           static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
        }
        std::fclose(statm);
    }
    // The kernel updates the peak lazily; it is never below the current size.
    if (usage.rss_mb > usage.max_rss_mb) usage.max_rss_mb = usage.rss_mb;
    return usage;
}

CpuMeter::CpuMeter(int64_t now_ns) : last_ns_(now_ns), last_cpu_s_(process_usage().cpu_s) {}

double CpuMeter::sample(int64_t now_ns) {
    const double cpu_s = process_usage().cpu_s;
    const double wall_s = static_cast<double>(now_ns - last_ns_) / 1e9;
    const double percent = wall_s > 0 ? 100.0 * (cpu_s - last_cpu_s_) / wall_s : 0.0;
    last_ns_ = now_ns;
    last_cpu_s_ = cpu_s;
    return percent;
}

}  // namespace mdcast::tools
