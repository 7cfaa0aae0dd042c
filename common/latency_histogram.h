// Latency statistics for the test client and the benchmark runner.
//
// Exact count, mean, standard deviation (Welford), min and max; percentiles from
// log-linear buckets (64 sub-buckets per power of two: under 1.6% error at any
// magnitude, fixed memory); and the seed reports' 10-microsecond histogram.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/metrics.h"

namespace mdcast {

class LatencyHistogram {
  public:
    static constexpr int64_t kDisplayBucketNs = 10'000;  // 10 us, as in the seed's figures
    static constexpr size_t kDisplayBuckets = 1000;      // 0..10 ms, then one overflow bucket

    void record(int64_t ns);  // negative values (clock skew) are counted as 0 and as skewed
    void merge(const LatencyHistogram& other);
    void reset();

    uint64_t count() const { return count_; }
    uint64_t negative_count() const { return negative_; }
    double mean_ns() const { return mean_; }
    double stddev_ns() const;
    int64_t min_ns() const { return count_ ? min_ : 0; }
    int64_t max_ns() const { return count_ ? max_ : 0; }
    // Value at or below which `fraction` (0..1) of samples fall; upper edge of its bucket,
    // capped at max().
    int64_t percentile_ns(double fraction) const;

    // As a Prometheus histogram in seconds, with buckets from 25 us to 1 s. A sample
    // counts under the first bound at or above its log-linear bucket's upper edge.
    HistogramSnapshot prometheus_seconds() const;

    // Non-empty display buckets as (lower bound ns, count); the last may be the overflow.
    std::vector<std::pair<int64_t, uint64_t>> display_buckets() const;

  private:
    static constexpr int kSubBucketBits = 6;
    static constexpr int kMagnitudes = 64 - kSubBucketBits;
    static size_t bucket_index(uint64_t value);
    static uint64_t bucket_upper(size_t index);

    uint64_t count_ = 0;
    uint64_t negative_ = 0;
    double mean_ = 0;
    double m2_ = 0;
    int64_t min_ = INT64_MAX;
    int64_t max_ = 0;
    std::vector<uint64_t> buckets_ = std::vector<uint64_t>((kMagnitudes + 1) << kSubBucketBits);
    std::array<uint64_t, kDisplayBuckets + 1> display_{};
};

}  // namespace mdcast
