// Tests for common/latency_histogram.h: exact moments against a naive
// computation, percentile accuracy across magnitudes, merging, display buckets.
#include "common/latency_histogram.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace {

using mdcast::LatencyHistogram;

struct Naive {
    double mean = 0;
    double stddev = 0;
    int64_t min = 0;
    int64_t max = 0;
};

Naive naive(const std::vector<int64_t>& sample) {
    Naive n;
    long double sum = 0;
    for (int64_t v : sample) sum += static_cast<long double>(v);
    const long double mean = sum / static_cast<long double>(sample.size());
    long double ss = 0;
    for (int64_t v : sample) {
        const long double d = static_cast<long double>(v) - mean;
        ss += d * d;
    }
    n.mean = static_cast<double>(mean);
    n.stddev =
        sample.size() > 1
            ? static_cast<double>(std::sqrt(ss / static_cast<long double>(sample.size() - 1)))
            : 0.0;
    n.min = *std::min_element(sample.begin(), sample.end());
    n.max = *std::max_element(sample.begin(), sample.end());
    return n;
}

// The exact percentile with the histogram's definition: the smallest sample value
// with at least ceil(fraction * n) samples at or below it.
int64_t exact_percentile(std::vector<int64_t> sorted, double fraction) {
    std::sort(sorted.begin(), sorted.end());
    const auto rank = static_cast<size_t>(std::ceil(fraction * static_cast<double>(sorted.size())));
    return sorted[std::max<size_t>(rank, 1) - 1];
}

// Log-uniform sample between lo and hi (deterministic seed).
std::vector<int64_t> log_uniform_sample(size_t n, double lo, double hi, uint32_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> exponent(std::log(lo), std::log(hi));
    std::vector<int64_t> out(n);
    for (auto& v : out) v = static_cast<int64_t>(std::exp(exponent(rng)));
    return out;
}

}  // namespace

TEST_CASE("empty histogram reports zeros", "[latency_histogram]") {
    LatencyHistogram h;
    CHECK(h.count() == 0);
    CHECK(h.negative_count() == 0);
    CHECK(h.mean_ns() == 0.0);
    CHECK(h.stddev_ns() == 0.0);
    CHECK(h.min_ns() == 0);
    CHECK(h.max_ns() == 0);
    CHECK(h.percentile_ns(0.5) == 0);
    CHECK(h.percentile_ns(1.0) == 0);
    CHECK(h.display_buckets().empty());
}

TEST_CASE("a single sample", "[latency_histogram]") {
    LatencyHistogram h;
    h.record(12345);
    CHECK(h.count() == 1);
    CHECK(h.mean_ns() == 12345.0);
    CHECK(h.stddev_ns() == 0.0);
    CHECK(h.min_ns() == 12345);
    CHECK(h.max_ns() == 12345);
    // Upper bucket edge capped at max: exact for a single sample.
    CHECK(h.percentile_ns(0.0) == 12345);
    CHECK(h.percentile_ns(0.5) == 12345);
    CHECK(h.percentile_ns(1.0) == 12345);
}

TEST_CASE("small values below 64 ns are exact", "[latency_histogram]") {
    LatencyHistogram h;
    for (int64_t v = 0; v < 64; ++v) h.record(v);
    for (int64_t v = 0; v < 64; ++v) {
        const double fraction = static_cast<double>(v + 1) / 64.0;
        INFO("fraction " << fraction);
        CHECK(h.percentile_ns(fraction) == v);
    }
}

TEST_CASE("count, mean, stddev, min and max match a naive computation", "[latency_histogram]") {
    std::mt19937_64 rng(42);
    std::uniform_int_distribution<int64_t> dist(1, 5'000'000);
    std::vector<int64_t> sample(20000);
    for (auto& v : sample) v = dist(rng);
    LatencyHistogram h;
    for (int64_t v : sample) h.record(v);
    const Naive n = naive(sample);
    CHECK(h.count() == sample.size());
    CHECK(h.min_ns() == n.min);
    CHECK(h.max_ns() == n.max);
    CHECK(h.mean_ns() == Approx(n.mean).epsilon(1e-9));
    CHECK(h.stddev_ns() == Approx(n.stddev).epsilon(1e-9));
    CHECK(h.negative_count() == 0);
}

TEST_CASE("stddev of a known sample", "[latency_histogram]") {
    LatencyHistogram h;
    for (int64_t v : {2, 4, 4, 4, 5, 5, 7, 9}) h.record(v);
    CHECK(h.mean_ns() == Approx(5.0));
    // Sample standard deviation (n - 1): sqrt(32 / 7).
    CHECK(h.stddev_ns() == Approx(std::sqrt(32.0 / 7.0)));
}

TEST_CASE("percentiles are within 1.6% across magnitudes", "[latency_histogram]") {
    struct Range {
        double lo, hi;
    };
    // ns, us, ms, s and a span over all of them.
    const Range ranges[] = {{1, 1e3}, {1e3, 1e6}, {1e6, 1e9}, {1e9, 1e11}, {1, 1e11}};
    uint32_t seed = 7;
    for (const Range& r : ranges) {
        const auto sample = log_uniform_sample(10000, r.lo, r.hi, seed++);
        LatencyHistogram h;
        for (int64_t v : sample) h.record(v);
        for (double fraction : {0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 1.0}) {
            const int64_t exact = exact_percentile(sample, fraction);
            const int64_t got = h.percentile_ns(fraction);
            INFO("range " << r.lo << ".." << r.hi << " p" << fraction * 100 << ": exact " << exact
                          << " got " << got);
            // The histogram reports the upper edge of the bucket: never below the truth.
            CHECK(got >= exact);
            CHECK(static_cast<double>(got - exact) <= 0.016 * static_cast<double>(exact));
        }
        CHECK(h.percentile_ns(1.0) == h.max_ns());
    }
}

TEST_CASE("percentile of exact powers of two and bucket edges", "[latency_histogram]") {
    for (int shift = 6; shift < 62; ++shift) {
        for (int64_t delta : {int64_t{-1}, int64_t{0}, int64_t{1}}) {
            const int64_t v = (int64_t{1} << shift) + delta;
            LatencyHistogram h;
            h.record(v);
            h.record(v);
            INFO("value " << v);
            CHECK(h.percentile_ns(0.5) == v);  // capped at max: exact
        }
    }
    // Two distinct values in the same bucket: the lower one reports the bucket's edge.
    LatencyHistogram h;
    h.record(1'000'000);
    h.record(1'000'001);
    h.record(2'000'000);
    const int64_t p = h.percentile_ns(1.0 / 3.0);
    CHECK(p >= 1'000'000);
    CHECK(static_cast<double>(p) <= 1'000'000 * 1.016);
}

TEST_CASE("the largest int64 value is recorded", "[latency_histogram]") {
    LatencyHistogram h;
    h.record(INT64_MAX);
    h.record(1);
    CHECK(h.max_ns() == INT64_MAX);
    CHECK(h.percentile_ns(1.0) == INT64_MAX);
    CHECK(h.percentile_ns(0.5) == 1);
    const auto buckets = h.display_buckets();
    REQUIRE(buckets.size() == 2);
    CHECK(buckets.back().first == 10'000'000);
}

TEST_CASE("negative values are counted as zero and as skewed", "[latency_histogram]") {
    LatencyHistogram h;
    h.record(-5);
    h.record(-1'000'000);
    h.record(100);
    CHECK(h.count() == 3);
    CHECK(h.negative_count() == 2);
    CHECK(h.min_ns() == 0);
    CHECK(h.max_ns() == 100);
    CHECK(h.mean_ns() == Approx(100.0 / 3.0));
    CHECK(h.percentile_ns(0.5) == 0);
    const auto buckets = h.display_buckets();
    REQUIRE(buckets.size() == 1);
    CHECK(buckets[0] == std::pair<int64_t, uint64_t>{0, 3});
}

TEST_CASE("merge equals recording everything in one histogram", "[latency_histogram]") {
    const auto a = log_uniform_sample(5000, 100, 1e8, 1);
    auto b = log_uniform_sample(3000, 1e4, 1e9, 2);
    b.push_back(-3);
    LatencyHistogram ha, hb, all;
    for (int64_t v : a) {
        ha.record(v);
        all.record(v);
    }
    for (int64_t v : b) {
        hb.record(v);
        all.record(v);
    }
    ha.merge(hb);
    CHECK(ha.count() == all.count());
    CHECK(ha.negative_count() == 1);
    CHECK(ha.min_ns() == all.min_ns());
    CHECK(ha.max_ns() == all.max_ns());
    CHECK(ha.mean_ns() == Approx(all.mean_ns()).epsilon(1e-9));
    CHECK(ha.stddev_ns() == Approx(all.stddev_ns()).epsilon(1e-9));
    for (double fraction : {0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0}) {
        CHECK(ha.percentile_ns(fraction) == all.percentile_ns(fraction));
    }
    CHECK(ha.display_buckets() == all.display_buckets());
}

TEST_CASE("merging with an empty histogram", "[latency_histogram]") {
    LatencyHistogram filled;
    for (int64_t v : {10, 20, 30}) filled.record(v);
    LatencyHistogram empty;

    LatencyHistogram copy = filled;
    copy.merge(empty);
    CHECK(copy.count() == 3);
    CHECK(copy.mean_ns() == Approx(20.0));
    CHECK(copy.min_ns() == 10);

    empty.merge(filled);
    CHECK(empty.count() == 3);
    CHECK(empty.mean_ns() == Approx(20.0));
    CHECK(empty.stddev_ns() == Approx(10.0));
    CHECK(empty.min_ns() == 10);
    CHECK(empty.max_ns() == 30);
    CHECK(empty.percentile_ns(0.5) == 20);
}

TEST_CASE("display buckets are 10 us wide with an overflow bucket", "[latency_histogram]") {
    LatencyHistogram h;
    h.record(0);
    h.record(9'999);          // still bucket 0
    h.record(10'000);         // bucket 10 us
    h.record(25'000);         // bucket 20 us
    h.record(29'999);         // bucket 20 us
    h.record(9'999'999);      // last regular bucket: 9.99 ms
    h.record(10'000'000);     // overflow
    h.record(5'000'000'000);  // overflow
    const auto buckets = h.display_buckets();
    using B = std::pair<int64_t, uint64_t>;
    const std::vector<B> expected{
        {0, 2}, {10'000, 1}, {20'000, 2}, {9'990'000, 1}, {10'000'000, 2}};
    CHECK(buckets == expected);
    CHECK(LatencyHistogram::kDisplayBucketNs == 10'000);
    CHECK(LatencyHistogram::kDisplayBuckets == 1000);
}

TEST_CASE("reset empties the histogram", "[latency_histogram]") {
    LatencyHistogram h;
    h.record(-1);
    h.record(1000);
    h.reset();
    CHECK(h.count() == 0);
    CHECK(h.negative_count() == 0);
    CHECK(h.mean_ns() == 0.0);
    CHECK(h.max_ns() == 0);
    CHECK(h.display_buckets().empty());
    h.record(7);
    CHECK(h.min_ns() == 7);
    CHECK(h.max_ns() == 7);
}

TEST_CASE("a latency histogram exports cumulative Prometheus buckets in seconds", "[histogram]") {
    mdcast::LatencyHistogram h;
    h.record(10'000);         // 10 us: the first bucket (25 us)
    h.record(400'000);        // 400 us: the 500 us bucket
    h.record(3'000'000);      // 3 ms: the 5 ms bucket
    h.record(5'000'000'000);  // 5 s: only +Inf
    const auto p = h.prometheus_seconds();
    REQUIRE(p.upper_bounds.size() == p.cumulative.size());
    CHECK(p.count == 4);
    CHECK(p.sum == Approx(5.00341).epsilon(0.001));
    CHECK(p.cumulative.front() == 1);
    CHECK(p.cumulative[4] == 2);  // le=0.0005
    CHECK(p.cumulative[3] == 1);  // le=0.00025
    CHECK(p.cumulative[7] == 3);  // le=0.005
    CHECK(p.cumulative.back() == 3);
}
