#include "common/latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace mdcast {

// Values below 2^kSubBucketBits get one bucket each; above, each power of two
// is split into 2^kSubBucketBits equal sub-buckets.
size_t LatencyHistogram::bucket_index(uint64_t value) {
    constexpr uint64_t sub = 1ull << kSubBucketBits;
    if (value < sub) return static_cast<size_t>(value);
    const int magnitude = 63 - std::countl_zero(value) - kSubBucketBits + 1;  // >= 1
    const uint64_t offset = (value >> (magnitude - 1)) - sub;                 // 0..sub-1
    return static_cast<size_t>(magnitude) * sub + static_cast<size_t>(offset);
}

uint64_t LatencyHistogram::bucket_upper(size_t index) {
    constexpr uint64_t sub = 1ull << kSubBucketBits;
    if (index < sub) return index;
    const uint64_t magnitude = index / sub;
    const uint64_t offset = index % sub;
    return ((sub + offset + 1) << (magnitude - 1)) - 1;
}

void LatencyHistogram::record(int64_t ns) {
    if (ns < 0) {
        ++negative_;
        ns = 0;
    }
    ++count_;
    const double delta = static_cast<double>(ns) - mean_;
    mean_ += delta / static_cast<double>(count_);
    m2_ += delta * (static_cast<double>(ns) - mean_);
    min_ = std::min(min_, ns);
    max_ = std::max(max_, ns);
    ++buckets_[bucket_index(static_cast<uint64_t>(ns))];
    ++display_[std::min<size_t>(static_cast<size_t>(ns / kDisplayBucketNs), kDisplayBuckets)];
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
    if (other.count_ == 0) return;
    // Chan et al. parallel combination of mean and M2.
    const double n = static_cast<double>(count_), m = static_cast<double>(other.count_);
    const double delta = other.mean_ - mean_;
    mean_ += delta * m / (n + m);
    m2_ += other.m2_ + delta * delta * n * m / (n + m);
    count_ += other.count_;
    negative_ += other.negative_;
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
    for (size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += other.buckets_[i];
    for (size_t i = 0; i < display_.size(); ++i) display_[i] += other.display_[i];
}

void LatencyHistogram::reset() {
    *this = LatencyHistogram();
}

double LatencyHistogram::stddev_ns() const {
    return count_ > 1 ? std::sqrt(m2_ / static_cast<double>(count_ - 1)) : 0.0;
}

int64_t LatencyHistogram::percentile_ns(double fraction) const {
    if (count_ == 0) return 0;
    const auto wanted = static_cast<uint64_t>(
        std::ceil(std::clamp(fraction, 0.0, 1.0) * static_cast<double>(count_)));
    uint64_t seen = 0;
    for (size_t i = 0; i < buckets_.size(); ++i) {
        seen += buckets_[i];
        if (seen >= std::max<uint64_t>(wanted, 1)) {
            return std::min(static_cast<int64_t>(bucket_upper(i)), max_);
        }
    }
    return max_;
}

HistogramSnapshot LatencyHistogram::prometheus_seconds() const {
    static const std::vector<double> kBounds{25e-6, 50e-6,  100e-6, 250e-6, 500e-6,
                                             1e-3,  2.5e-3, 5e-3,   10e-3,  25e-3,
                                             50e-3, 100e-3, 250e-3, 500e-3, 1.0};
    HistogramSnapshot out{kBounds,
                          std::vector<uint64_t>(kBounds.size()),
                          count_,
                          mean_ * static_cast<double>(count_) / 1e9,
                          static_cast<double>(percentile_ns(0.5)) / 1e9,
                          static_cast<double>(percentile_ns(0.99)) / 1e9};
    for (size_t i = 0; i < buckets_.size(); ++i) {
        if (buckets_[i] == 0) continue;
        const double upper_s = static_cast<double>(bucket_upper(i)) / 1e9;
        const auto first = std::lower_bound(kBounds.begin(), kBounds.end(), upper_s);
        if (first != kBounds.end()) out.cumulative[first - kBounds.begin()] += buckets_[i];
    }
    for (size_t b = 1; b < out.cumulative.size(); ++b) out.cumulative[b] += out.cumulative[b - 1];
    return out;
}

std::vector<std::pair<int64_t, uint64_t>> LatencyHistogram::display_buckets() const {
    std::vector<std::pair<int64_t, uint64_t>> out;
    for (size_t i = 0; i < display_.size(); ++i) {
        if (display_[i] != 0)
            out.emplace_back(static_cast<int64_t>(i) * kDisplayBucketNs, display_[i]);
    }
    return out;
}

}  // namespace mdcast
