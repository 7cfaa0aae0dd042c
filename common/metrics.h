// Every counter, gauge and histogram of a daemon, declared once with its help
// text, read on demand from where it is kept. The same registry feeds the admin
// endpoint's /metrics (Prometheus text format) and the periodic counters log
// line, so the two can never disagree or drift apart.
//
// A metric may have several series that differ by labels (close reasons as
// reason="slow_consumer"): register them one after the other under one name.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace mdcast {

// A Prometheus histogram at one instant: cumulative counts at each upper bound
// (the +Inf bucket is `count`), the number of observations and their sum.
struct HistogramSnapshot {
    std::vector<double> upper_bounds;  // ascending, in the metric's unit (seconds)
    std::vector<uint64_t> cumulative;  // same size as upper_bounds
    uint64_t count = 0;
    double sum = 0;
    double p50 = 0;  // for the log line, which shows percentiles rather than buckets
    double p99 = 0;
};

class MetricsRegistry {
  public:
    enum class Kind { kCounter, kGauge, kHistogram };
    using Labels = std::vector<std::pair<std::string, std::string>>;

    // `name` without the daemon prefix, e.g. "updates_in_total"; `prefix` is
    // prepended for Prometheus ("mdcast_server_").
    explicit MetricsRegistry(std::string prefix) : prefix_(std::move(prefix)) {}

    void counter(std::string name, std::string help, std::function<double()> read);
    void gauge(std::string name, std::string help, std::function<double()> read);
    // One labelled series; series of one name must be registered one after another.
    void counter(std::string name, std::string help, Labels labels, std::function<double()> read);
    void gauge(std::string name, std::string help, Labels labels, std::function<double()> read);
    void histogram(std::string name, std::string help, std::function<HistogramSnapshot()> read);
    // Series whose label values are known only at run time (one per service, say),
    // all read at once; none at all is fine (only the HELP and TYPE lines then).
    using Series = std::vector<std::pair<Labels, double>>;
    void gauge_family(std::string name, std::string help, std::function<Series()> read);
    // A metric with a name of its own, without the daemon prefix (mdcast_build_info,
    // the standard process_* metrics that every Prometheus client exports).
    void gauge_unprefixed(std::string name, std::string help, Labels labels,
                          std::function<double()> read);
    void counter_unprefixed(std::string name, std::string help, std::function<double()> read);

    // Prometheus text exposition format (version 0.0.4).
    std::string prometheus() const;
    // "name=value ..." for logs, without the prefix and the _total suffix; labelled
    // series add their label values (closes_slow_consumer=1); a histogram x_seconds
    // shows x_p50_seconds and x_p99_seconds.
    std::string log_line() const;
    // {"name": value, ...}: labelled series as "name:value", histograms as in log_line().
    std::string json() const;
    size_t size() const { return metrics_.size(); }

  private:
    struct Metric {
        std::string name;  // full Prometheus name
        std::string short_name;
        std::string help;
        Kind kind;
        Labels labels;
        std::function<double()> read;
        std::function<HistogramSnapshot()> read_histogram;
        std::function<Series()> read_family;
    };
    void add(Metric metric);
    // (name, value) pairs of one metric for log_line() and json().
    std::vector<std::pair<std::string, double>> log_values(const Metric& metric, bool json) const;
    static std::string format(double value);

    std::string prefix_;
    std::vector<Metric> metrics_;
};

}  // namespace mdcast
