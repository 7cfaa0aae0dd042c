// What mdcast-client counts and measures, and how it reports it.
//
// Latency goes into one of two histograms: start-up (the first --warmup
// seconds, while images arrive and queues fill) and steady state (the rest,
// what the benchmark tables report). A third, cheap accumulator covers only
// the current stats interval, so a growing lag shows in the periodic lines.
// Rendering (the JSON summary, CSV rows) lives here too so it can be tested
// against known samples.
#pragma once

#include <cstdint>
#include <string>

#include "common/latency_histogram.h"
#include "item_table.h"
#include "tools/process_usage.h"

namespace mdcast::tools {

struct ClientTotals {
    uint64_t refreshes = 0;
    uint64_t updates = 0;
    uint64_t statuses = 0;
    uint64_t gaps = 0;           // updates whose sequence skipped ahead
    uint64_t missing = 0;        // sequence numbers skipped
    uint64_t duplicates = 0;     // sequence at or below the last one
    uint64_t conflated = 0;      // updates that merged several (slow-consumer conflation)
    uint64_t unknown_items = 0;  // updates for ids never refreshed on that connection
    uint64_t closed = 0;         // connections closed by the peer or an error

    ClientTotals& operator+=(const ClientTotals& other);
};

// One update's sequence checked against its item (check_sequence) and counted
// in `totals` as a gap (with the numbers missing) or a duplicate.
void count_sequence(ClientTotals& totals, ItemState& item, uint64_t seq, bool gaps_expected);
// The same on an item's last sequence alone (check_sequence's second form).
void count_sequence(ClientTotals& totals, uint64_t& last_seq, uint64_t seq, bool gaps_expected);

// Count, mean and max over one stats interval.
struct IntervalLatency {
    uint64_t count = 0;
    double sum_ns = 0;
    int64_t max_ns = 0;
    void record(int64_t ns) {
        ++count;
        sum_ns += static_cast<double>(ns);
        if (ns > max_ns) max_ns = ns;
    }
    double mean_ns() const { return count ? sum_ns / static_cast<double>(count) : 0.0; }
    void merge(const IntervalLatency& other) {
        count += other.count;
        sum_ns += other.sum_ns;
        if (other.max_ns > max_ns) max_ns = other.max_ns;
    }
};

// One periodic stats sample (also a CSV row).
struct StatsSample {
    double elapsed_s = 0;
    double updates_per_s = 0;
    double cpu_percent = 0;
    double rss_mb = 0;
    IntervalLatency latency;
};

class ClientStats {
  public:
    explicit ClientStats(int64_t start_ns) : start_ns_(start_ns) {}

    // A refresh arrived at `now_ns` (CLOCK_MONOTONIC).
    void on_image(int64_t now_ns);
    // An update's latency (ns; negative: publisher clock ahead). Unstamped updates are not
    // recorded.
    void record_latency(int64_t latency_ns) {
        (steady_ ? steady_latency_ : startup_latency_).record(latency_ns);
        interval_.record(latency_ns < 0 ? 0 : latency_ns);
    }
    // The warm-up is over: later latencies count as steady state.
    void begin_steady(int64_t now_ns);
    // Closes the current interval; `now_ns` CLOCK_MONOTONIC.
    StatsSample take_sample(int64_t now_ns, double cpu_percent, double rss_mb);

    ClientTotals totals;

    const LatencyHistogram& startup_latency() const { return startup_latency_; }
    const LatencyHistogram& steady_latency() const { return steady_latency_; }
    bool steady() const { return steady_; }
    // Seconds from the first to the last image (0 with fewer than two).
    double image_time_s() const;

    // Adds another connection's counts and histograms (a client that keeps one
    // ClientStats per thread merges them for its summary). Steady state starts at
    // the earlier of the two.
    void merge(const ClientStats& other);

    // The final summary line; `connections` as configured.
    std::string summary_json(int64_t now_ns, int64_t connections, double warmup_s,
                             const ProcessUsage& usage) const;

  private:
    int64_t start_ns_;
    int64_t steady_start_ns_ = 0;
    uint64_t updates_at_steady_ = 0;
    bool steady_ = false;
    int64_t first_image_ns_ = 0;
    int64_t last_image_ns_ = 0;
    LatencyHistogram startup_latency_;
    LatencyHistogram steady_latency_;
    IntervalLatency interval_;
    int64_t interval_start_ns_ = 0;
    uint64_t interval_updates_ = 0;
};

// {"count":..,"mean":..,"stddev":..,"min":..,"p50":..,"p90":..,"p99":..,"p99_9":..,"p99_99":..,
//  "max":..,"negative":..[,"histogram_10us":[[lower_us,count],...]]} in microseconds.
std::string latency_json(const LatencyHistogram& latency, bool with_histogram);

// CSV for --csv: the header, and one row per stats sample.
std::string stats_csv_header();
std::string stats_csv_row(const StatsSample& sample, const ClientTotals& totals);

}  // namespace mdcast::tools
