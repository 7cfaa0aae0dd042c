#include "client_stats.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace mdcast::tools {

namespace {

double us(double ns) {
    return ns / 1e3;
}
double us(int64_t ns) {
    return static_cast<double>(ns) / 1e3;
}

}  // namespace

void ClientStats::on_image(int64_t now_ns) {
    ++totals.refreshes;
    if (first_image_ns_ == 0) first_image_ns_ = now_ns;
    last_image_ns_ = now_ns;
}

void ClientStats::begin_steady(int64_t now_ns) {
    if (steady_) return;
    steady_ = true;
    steady_start_ns_ = now_ns;
    updates_at_steady_ = totals.updates;
}

void count_sequence(ClientTotals& totals, ItemState& item, uint64_t seq, bool gaps_expected) {
    count_sequence(totals, item.last_seq, seq, gaps_expected);
}

void count_sequence(ClientTotals& totals, uint64_t& last_seq, uint64_t seq, bool gaps_expected) {
    uint64_t missing = 0;
    switch (check_sequence(last_seq, seq, gaps_expected, missing)) {
        case SequenceOutcome::kInOrder:
            break;
        case SequenceOutcome::kDuplicate:
            ++totals.duplicates;
            break;
        case SequenceOutcome::kGap:
            ++totals.gaps;
            totals.missing += missing;
            break;
    }
}

ClientTotals& ClientTotals::operator+=(const ClientTotals& other) {
    refreshes += other.refreshes;
    updates += other.updates;
    statuses += other.statuses;
    gaps += other.gaps;
    missing += other.missing;
    duplicates += other.duplicates;
    conflated += other.conflated;
    unknown_items += other.unknown_items;
    closed += other.closed;
    return *this;
}

void ClientStats::merge(const ClientStats& other) {
    totals += other.totals;
    startup_latency_.merge(other.startup_latency_);
    steady_latency_.merge(other.steady_latency_);
    if (other.steady_) {
        steady_start_ns_ =
            steady_ ? std::min(steady_start_ns_, other.steady_start_ns_) : other.steady_start_ns_;
        steady_ = true;
    }
    updates_at_steady_ += other.updates_at_steady_;
    if (other.first_image_ns_ != 0 &&
        (first_image_ns_ == 0 || other.first_image_ns_ < first_image_ns_)) {
        first_image_ns_ = other.first_image_ns_;
    }
    last_image_ns_ = std::max(last_image_ns_, other.last_image_ns_);
    start_ns_ = std::min(start_ns_, other.start_ns_);
}

double ClientStats::image_time_s() const {
    return static_cast<double>(last_image_ns_ - first_image_ns_) / 1e9;
}

StatsSample ClientStats::take_sample(int64_t now_ns, double cpu_percent, double rss_mb) {
    if (interval_start_ns_ == 0) interval_start_ns_ = start_ns_;
    StatsSample sample;
    sample.elapsed_s = static_cast<double>(now_ns - start_ns_) / 1e9;
    const double interval_s = static_cast<double>(now_ns - interval_start_ns_) / 1e9;
    sample.updates_per_s =
        interval_s > 0 ? static_cast<double>(totals.updates - interval_updates_) / interval_s : 0.0;
    sample.cpu_percent = cpu_percent;
    sample.rss_mb = rss_mb;
    sample.latency = interval_;
    interval_ = IntervalLatency{};
    interval_start_ns_ = now_ns;
    interval_updates_ = totals.updates;
    return sample;
}

std::string latency_json(const LatencyHistogram& h, bool with_histogram) {
    char text[640];
    std::snprintf(
        text, sizeof text,
        "{\"count\":%" PRIu64
        ",\"mean\":%.2f,\"stddev\":%.2f,\"min\":%.2f,\"p50\":%.2f,\"p90\":%.2f,\"p99\":%.2f,"
        "\"p99_9\":%.2f,\"p99_99\":%.2f,\"max\":%.2f,\"negative\":%" PRIu64,
        h.count(), us(h.mean_ns()), us(h.stddev_ns()), us(h.min_ns()), us(h.percentile_ns(0.5)),
        us(h.percentile_ns(0.9)), us(h.percentile_ns(0.99)), us(h.percentile_ns(0.999)),
        us(h.percentile_ns(0.9999)), us(h.max_ns()), h.negative_count());
    std::string out = text;
    if (with_histogram) {
        out += ",\"histogram_10us\":[";
        bool first = true;
        for (const auto& [lower_ns, count] : h.display_buckets()) {
            std::snprintf(text, sizeof text, "%s[%" PRId64 ",%" PRIu64 "]", first ? "" : ",",
                          lower_ns / 1000, count);
            out += text;
            first = false;
        }
        out += "]";
    }
    return out + "}";
}

std::string ClientStats::summary_json(int64_t now_ns, int64_t connections, double warmup_s,
                                      const ProcessUsage& usage) const {
    const double elapsed = static_cast<double>(now_ns - start_ns_) / 1e9;
    const double steady_s = steady_ ? static_cast<double>(now_ns - steady_start_ns_) / 1e9 : 0.0;
    const uint64_t steady_updates = steady_ ? totals.updates - updates_at_steady_ : 0;
    const double image_s = image_time_s();
    char text[1024];
    std::snprintf(
        text, sizeof text,
        "{\"type\":\"summary\",\"elapsed_s\":%.3f,\"connections\":%lld,\"refreshes\":%" PRIu64
        ",\"updates\":%" PRIu64 ",\"statuses\":%" PRIu64 ",\"gaps\":%" PRIu64
        ",\"missing\":%" PRIu64 ",\"duplicates\":%" PRIu64 ",\"conflated\":%" PRIu64
        ",\"unknown_items\":%" PRIu64 ",\"closed\":%" PRIu64
        ",\"updates_per_s\":%.1f,\"warmup_s\":%.3f,\"steady_s\":%.3f,\"steady_updates\":%" PRIu64
        ",\"steady_updates_per_s\":%.1f,\"image_time_s\":%.6f,\"images_per_s\":%.1f,"
        "\"cpu_s\":%.3f,\"cpu_percent\":%.1f,\"rss_mb\":%.1f,\"max_rss_mb\":%.1f,",
        elapsed, static_cast<long long>(connections), totals.refreshes, totals.updates,
        totals.statuses, totals.gaps, totals.missing, totals.duplicates, totals.conflated,
        totals.unknown_items, totals.closed,
        elapsed > 0 ? static_cast<double>(totals.updates) / elapsed : 0.0, warmup_s, steady_s,
        steady_updates, steady_s > 0 ? static_cast<double>(steady_updates) / steady_s : 0.0,
        image_s, image_s > 0 ? static_cast<double>(totals.refreshes) / image_s : 0.0, usage.cpu_s,
        elapsed > 0 ? 100.0 * usage.cpu_s / elapsed : 0.0, usage.rss_mb, usage.max_rss_mb);
    return std::string(text) + "\"latency_us\":" + latency_json(steady_latency_, true) +
           ",\"startup_latency_us\":" + latency_json(startup_latency_, true) + "}";
}

std::string stats_csv_header() {
    return "elapsed_s,updates,updates_per_s,refreshes,statuses,gaps,missing,duplicates,closed,"
           "cpu_percent,rss_mb,latency_count,latency_mean_us,latency_max_us\n";
}

std::string stats_csv_row(const StatsSample& s, const ClientTotals& t) {
    char text[512];
    std::snprintf(text, sizeof text,
                  "%.3f,%" PRIu64 ",%.1f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                  ",%" PRIu64 ",%.1f,%.1f,%" PRIu64 ",%.2f,%.2f\n",
                  s.elapsed_s, t.updates, s.updates_per_s, t.refreshes, t.statuses, t.gaps,
                  t.missing, t.duplicates, t.closed, s.cpu_percent, s.rss_mb, s.latency.count,
                  us(s.latency.mean_ns()), us(s.latency.max_ns));
    return text;
}

}  // namespace mdcast::tools
