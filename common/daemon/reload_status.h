// What a configuration reload did, for the one who asked: SIGHUP (systemctl reload)
// only logs it, POST /reload on the admin endpoint answers with it (mdcastctl reload
// reports it and sets its exit status). The reload itself is detail::reload_daemon()
// (daemon_main.h); run_daemon() installs it as reload_hook() so the admin endpoint
// runs it on the loop, synchronously, like the signal does.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/config/config_schema.h"
#include "common/daemon/admin_http.h"
#include "common/metrics.h"

namespace mdcast {

struct ReloadOutcome {
    // The file's errors when it was refused (then nothing else changed).
    std::vector<std::string> errors;
    std::vector<std::string> applied;         // keys in effect from now on
    std::vector<std::string> failed;          // keys whose files did not load: old value stays
    std::vector<std::string> restart_needed;  // keys changed in the file, not applied

    // "refused", "failed", "restart_needed", "applied" or "unchanged" (the worst first).
    std::string result() const;
    // Files each changed key under the verdict the schema's apply_reload() gave it.
    void record(const std::vector<config::ReloadStep>& steps);
    // Refused, or a file did not load: counted in config_reload_errors_total.
    bool is_error() const { return !errors.empty() || !failed.empty(); }
    // {"result":..., "applied":[...], "failed":[...], "restart_needed":[...], "errors":[...]}
    std::string json() const;
};

// Reloads done since start, and those that were errors (config_reloads_total,
// config_reload_errors_total).
struct ReloadCounters {
    uint64_t reloads = 0;
    uint64_t errors = 0;
    void count(const ReloadOutcome& outcome) {
        ++reloads;
        errors += outcome.is_error();
    }
};
ReloadCounters& reload_counters();
void register_reload_metrics(MetricsRegistry& metrics);

// Set by run_daemon() while the loop runs; empty before and after.
std::function<ReloadOutcome()>& reload_hook();

// POST /reload: runs the hook and answers 200 with the outcome's JSON, whatever the
// result (mdcastctl reads `result`); 503 when no reload can run.
AdminHttp::Reply reload_reply();

}  // namespace mdcast
