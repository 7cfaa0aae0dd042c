// Every counter and gauge of a daemon, declared once with its help text, read
// on demand from where it is kept. The same registry feeds the admin endpoint's
// /metrics (Prometheus text format) and the periodic counters log line, so the
// two can never disagree or drift apart.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mdcast {

class MetricsRegistry {
  public:
    enum class Kind { kCounter, kGauge };

    // `name` without the daemon prefix, e.g. "updates_in_total"; `prefix` is
    // prepended for Prometheus ("mdcast_server_").
    explicit MetricsRegistry(std::string prefix) : prefix_(std::move(prefix)) {}

    void counter(std::string name, std::string help, std::function<double()> read);
    void gauge(std::string name, std::string help, std::function<double()> read);

    // Prometheus text exposition format (version 0.0.4).
    std::string prometheus() const;
    // "name=value ..." for logs, without the prefix and the _total suffix.
    std::string log_line() const;
    // {"name": value, ...}
    std::string json() const;
    size_t size() const { return metrics_.size(); }

  private:
    struct Metric {
        std::string name;
        std::string help;
        Kind kind;
        std::function<double()> read;
    };
    static std::string format(double value);

    std::string prefix_;
    std::vector<Metric> metrics_;
};

}  // namespace mdcast
