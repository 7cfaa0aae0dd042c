// CPU time and memory of this process, for the tools' stats lines and summaries.
#pragma once

#include <cstdint>

namespace mdcast::tools {

struct ProcessUsage {
    double cpu_s = 0;       // user + system CPU seconds since the process started
    double rss_mb = 0;      // resident set size now
    double max_rss_mb = 0;  // peak resident set size
};

ProcessUsage process_usage();

// CPU use between successive samples, as a percentage of one core.
class CpuMeter {
  public:
    // Starts the first interval at `now_ns` (CLOCK_MONOTONIC).
    explicit CpuMeter(int64_t now_ns);
    // Percent of one core used since the previous call (or construction); 0 for an empty interval.
    double sample(int64_t now_ns);

  private:
    int64_t last_ns_;
    double last_cpu_s_;
};

}  // namespace mdcast::tools
