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

std::string escape_label(const std::string& value) {
    std::string out;
    for (char c : value) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

// `{a="x",b="y"}` with `extra` (le="0.001") last; empty without labels.
std::string label_text(const MetricsRegistry::Labels& labels, const std::string& extra = "") {
    std::string out;
    for (const auto& [key, value] : labels) {
        out += (out.empty() ? "{" : ",") + key + "=\"" + escape_label(value) + "\"";
    }
    if (!extra.empty()) out += (out.empty() ? "{" : ",") + extra;
    return out.empty() ? out : out + "}";
}

const char* type_name(MetricsRegistry::Kind kind) {
    switch (kind) {
        case MetricsRegistry::Kind::kCounter:
            return "counter";
        case MetricsRegistry::Kind::kGauge:
            return "gauge";
        case MetricsRegistry::Kind::kHistogram:
            return "histogram";
    }
    return "untyped";
}

}  // namespace

void MetricsRegistry::add(Metric metric) {
    if (!valid_name(metric.name) || !valid_name(metric.short_name))
        throw std::invalid_argument("bad metric name '" + metric.name + "'");
    for (const auto& [key, value] : metric.labels) {
        if (!valid_name(key)) throw std::invalid_argument("bad label name '" + key + "'");
    }
    metrics_.push_back(std::move(metric));
}

void MetricsRegistry::counter(std::string name, std::string help, std::function<double()> read) {
    counter(std::move(name), std::move(help), {}, std::move(read));
}

void MetricsRegistry::gauge(std::string name, std::string help, std::function<double()> read) {
    gauge(std::move(name), std::move(help), {}, std::move(read));
}

void MetricsRegistry::counter(std::string name, std::string help, Labels labels,
                              std::function<double()> read) {
    add({prefix_ + name, name, std::move(help), Kind::kCounter, std::move(labels), std::move(read),
         nullptr, nullptr});
}

void MetricsRegistry::gauge(std::string name, std::string help, Labels labels,
                            std::function<double()> read) {
    add({prefix_ + name, name, std::move(help), Kind::kGauge, std::move(labels), std::move(read),
         nullptr, nullptr});
}

void MetricsRegistry::histogram(std::string name, std::string help,
                                std::function<HistogramSnapshot()> read) {
    add({prefix_ + name,
         name,
         std::move(help),
         Kind::kHistogram,
         {},
         nullptr,
         std::move(read),
         nullptr});
}

void MetricsRegistry::gauge_family(std::string name, std::string help,
                                   std::function<Series()> read) {
    add({prefix_ + name,
         name,
         std::move(help),
         Kind::kGauge,
         {},
         nullptr,
         nullptr,
         std::move(read)});
}

void MetricsRegistry::gauge_unprefixed(std::string name, std::string help, Labels labels,
                                       std::function<double()> read) {
    std::string short_name = name;
    add({std::move(name), std::move(short_name), std::move(help), Kind::kGauge, std::move(labels),
         std::move(read), nullptr, nullptr});
}

void MetricsRegistry::counter_unprefixed(std::string name, std::string help,
                                         std::function<double()> read) {
    std::string short_name = name;
    add({std::move(name),
         std::move(short_name),
         std::move(help),
         Kind::kCounter,
         {},
         std::move(read),
         nullptr,
         nullptr});
}

std::string MetricsRegistry::format(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    char text[64];
    if (value == std::floor(value) && std::fabs(value) < 1e15) {
        std::snprintf(text, sizeof text, "%.0f", value);
    } else {
        // 15 digits: a Unix timestamp in seconds keeps its microseconds.
        std::snprintf(text, sizeof text, "%.15g", value);
    }
    return text;
}

std::string MetricsRegistry::prometheus() const {
    std::string out;
    for (size_t i = 0; i < metrics_.size(); ++i) {
        const Metric& m = metrics_[i];
        if (i == 0 || metrics_[i - 1].name != m.name) {
            out += "# HELP " + m.name + " " + m.help + "\n";
            out += "# TYPE " + m.name + " " + type_name(m.kind) + "\n";
        }
        if (m.read_family) {
            for (const auto& [labels, value] : m.read_family())
                out += m.name + label_text(labels) + " " + format(value) + "\n";
            continue;
        }
        if (m.kind != Kind::kHistogram) {
            out += m.name + label_text(m.labels) + " " + format(m.read()) + "\n";
            continue;
        }
        const HistogramSnapshot h = m.read_histogram();
        for (size_t b = 0; b < h.upper_bounds.size(); ++b) {
            out += m.name + "_bucket" +
                   label_text(m.labels, "le=\"" + format(h.upper_bounds[b]) + "\"") + " " +
                   format(static_cast<double>(h.cumulative[b])) + "\n";
        }
        out += m.name + "_bucket" + label_text(m.labels, "le=\"+Inf\"") + " " +
               format(static_cast<double>(h.count)) + "\n";
        out += m.name + "_sum" + label_text(m.labels) + " " + format(h.sum) + "\n";
        out += m.name + "_count" + label_text(m.labels) + " " +
               format(static_cast<double>(h.count)) + "\n";
    }
    return out;
}

std::vector<std::pair<std::string, double>> MetricsRegistry::log_values(const Metric& m,
                                                                        bool json) const {
    std::string name = m.short_name;
    if (m.kind == Kind::kHistogram) {
        const HistogramSnapshot h = m.read_histogram();
        if (name.size() > 8 && name.compare(name.size() - 8, 8, "_seconds") == 0)
            name.resize(name.size() - 8);
        return {{name + "_p50_seconds", h.p50}, {name + "_p99_seconds", h.p99}};
    }
    if (!json && name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0)
        name.resize(name.size() - 6);
    const auto labelled = [&](const Labels& labels) {
        std::string full = name;
        for (const auto& [key, value] : labels) full += (json ? ":" : "_") + value;
        return full;
    };
    if (!m.read_family) return {{labelled(m.labels), m.read()}};
    std::vector<std::pair<std::string, double>> values;
    for (const auto& [labels, value] : m.read_family())
        values.emplace_back(labelled(labels), value);
    return values;
}

std::string MetricsRegistry::log_line() const {
    std::string out;
    for (const auto& m : metrics_) {
        for (const auto& [name, value] : log_values(m, false)) {
            if (!out.empty()) out += ' ';
            out += name + "=" + format(value);
        }
    }
    return out;
}

std::string MetricsRegistry::json() const {
    std::string out = "{";
    for (const auto& m : metrics_) {
        for (const auto& [name, value] : log_values(m, true)) {
            if (out.size() > 1) out += ",";
            out +=
                "\"" + escape_label(name) + "\":" + (std::isfinite(value) ? format(value) : "null");
        }
    }
    return out + "}";
}

}  // namespace mdcast
