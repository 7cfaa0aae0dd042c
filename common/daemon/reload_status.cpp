#include "common/daemon/reload_status.h"

#include "common/daemon/process_metrics.h"

namespace mdcast {

std::string ReloadOutcome::result() const {
    if (!errors.empty()) return "refused";
    if (!failed.empty()) return "failed";
    if (!restart_needed.empty()) return "restart_needed";
    return applied.empty() ? "unchanged" : "applied";
}

void ReloadOutcome::record(const std::vector<config::ReloadStep>& steps) {
    for (const auto& [change, verdict] : steps) {
        switch (verdict) {
            case config::ReloadVerdict::kApplied:
                applied.push_back(change.key);
                break;
            case config::ReloadVerdict::kFailed:
                failed.push_back(change.key);
                break;
            case config::ReloadVerdict::kRestart:
                restart_needed.push_back(change.key);
                break;
        }
    }
}

std::string ReloadOutcome::json() const {
    return "{\"result\":\"" + result() + "\",\"applied\":" + json_string_list(applied) +
           ",\"failed\":" + json_string_list(failed) +
           ",\"restart_needed\":" + json_string_list(restart_needed) +
           ",\"errors\":" + json_string_list(errors) + "}";
}

ReloadCounters& reload_counters() {
    static ReloadCounters counters;
    return counters;
}

void register_reload_metrics(MetricsRegistry& m) {
    const ReloadCounters& c = reload_counters();
    m.counter("config_reloads_total", "Configuration reloads (SIGHUP or POST /reload)",
              [&c] { return c.reloads; });
    m.counter("config_reload_errors_total",
              "Reloads that refused the file or whose files (certificates, users) did not load: "
              "the running values stay",
              [&c] { return c.errors; });
}

std::function<ReloadOutcome()>& reload_hook() {
    static std::function<ReloadOutcome()> hook;
    return hook;
}

AdminHttp::Reply reload_reply() {
    if (!reload_hook()) return {503, "the daemon is not running its loop: no reload\n"};
    return {200, reload_hook()().json()};
}

}  // namespace mdcast
