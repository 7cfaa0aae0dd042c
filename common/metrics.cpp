#include "common/metrics.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace mdcast {

namespace {
bool valid_name(const std::string& name) {
    if (name.empty()) return false;
    for (char c : name) {
        if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
    }
    return true;
}
}  // namespace

void MetricsRegistry::counter(std::string name, std::string help, std::function<double()> read) {
    if (!valid_name(name)) throw std::invalid_argument("bad metric name '" + name + "'");
    metrics_.push_back(Metric{std::move(name), std::move(help), Kind::kCounter, std::move(read)});
}

void MetricsRegistry::gauge(std::string name, std::string help, std::function<double()> read) {
    if (!valid_name(name)) throw std::invalid_argument("bad metric name '" + name + "'");
    metrics_.push_back(Metric{std::move(name), std::move(help), Kind::kGauge, std::move(read)});
}

std::string MetricsRegistry::format(double value) {
    if (std::isnan(value)) return "NaN";
    char text[64];
    if (value == std::floor(value) && std::fabs(value) < 1e15) {
        std::snprintf(text, sizeof text, "%.0f", value);
    } else {
        std::snprintf(text, sizeof text, "%.6g", value);
    }
    return text;
}

std::string MetricsRegistry::prometheus() const {
    std::string out;
    for (const auto& m : metrics_) {
        const std::string name = prefix_ + m.name;
        out += "# HELP " + name + " " + m.help + "\n";
        out += "# TYPE " + name + (m.kind == Kind::kCounter ? " counter\n" : " gauge\n");
        out += name + " " + format(m.read()) + "\n";
    }
    return out;
}

std::string MetricsRegistry::log_line() const {
    std::string out;
    for (const auto& m : metrics_) {
        std::string name = m.name;
        if (name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0)
            name.resize(name.size() - 6);
        if (!out.empty()) out += ' ';
        out += name + "=" + format(m.read());
    }
    return out;
}

std::string MetricsRegistry::json() const {
    std::string out = "{";
    for (const auto& m : metrics_) {
        if (out.size() > 1) out += ",";
        const double v = m.read();
        out += "\"" + m.name + "\":" + (std::isfinite(v) ? format(v) : "null");
    }
    return out + "}";
}

}  // namespace mdcast
