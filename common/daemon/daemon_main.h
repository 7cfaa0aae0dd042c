// The start-up sequence every daemon shares: command line, config (with
// --check-config), logging, signals, run. Exceptions stop at this edge.
#pragma once

#include <csignal>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "common/config/command_line.h"
#include "common/config/config_schema.h"
#include "common/daemon/config_checks.h"
#include "common/daemon/reload_status.h"
#include "common/daemon/systemd_notify.h"
#include "common/heap_retention.h"
#include "common/logging.h"
#include "common/net/event_loop.h"
#include "common/scheduling.h"

namespace mdcast {

struct DaemonOptions {
    std::string config_path;
    bool check_config = false;
    bool help_config = false;
    int verbosity = 0;
};

// Adds the options every daemon has (--config, --check-config, --help-config, -v).
void add_daemon_options(cli::CommandLine& command_line, DaemonOptions& options);

// What a running daemon exposes to the signal handlers.
template <class Config>
struct DaemonProcess {
    // SIGTERM/SIGINT: stop accepting, say goodbye, flush, then stop the loop
    // (within the daemon's grace period).
    std::function<void(const std::string& why)> shutdown;
    // SIGHUP: `fresh` is the re-read configuration and `changes` the keys that
    // differ from the running one and whose schema rows reload. Re-reads the
    // daemon's files (certificates, users, entitlements) and says which of those
    // keys failed to load or need a restart after all; the others are then copied
    // into the running configuration, which the daemon reads them from. May be
    // empty (the rows' keys are read at use).
    std::function<config::ReloadResult(const Config& fresh,
                                       const std::vector<config::ConfigChange>& changes)>
        reload;
};

// Keys changed in the file that a SIGHUP could not apply (they need a restart), as
// of the last reload; /info shows them.
std::vector<std::string>& keys_waiting_for_restart();

namespace detail {

// log.file with {name} replaced by the process name.
inline std::string log_file_path(std::string pattern, const std::string& name) {
    for (size_t at = pattern.find("{name}"); at != std::string::npos;
         at = pattern.find("{name}", at)) {
        pattern.replace(at, 6, name);
        at += name.size();
    }
    return pattern;
}

// Logs what a SIGHUP did with each changed key and records those waiting for a restart.
void log_reload(const std::vector<config::ReloadStep>& steps);

// SIGHUP: re-read the file, hand the reloading changes to the daemon, apply them to
// `running` (so a later SIGHUP compares against them), log each outcome and return it
// (POST /reload answers with it).
template <class Config>
ReloadOutcome reload_daemon(const DaemonOptions& options, const config::Schema<Config>& schema,
                            Config& running, DaemonProcess<Config>& process) {
    auto logger = log::get("main");
    ReloadOutcome outcome;
    Config fresh = running;
    if (options.config_path.empty()) {
        logger->info("SIGHUP: no configuration file; re-reading the daemon's files only");
    } else {
        try {
            fresh = schema.load_file(options.config_path);
        } catch (const config::ConfigErrors& errors) {
            for (const auto& error : errors.errors()) {
                logger->error("SIGHUP: {}", error.to_string());
                outcome.errors.push_back(error.to_string());
            }
            logger->error(
                "SIGHUP: {} configuration error(s) in {}; keeping the running configuration",
                errors.errors().size(), options.config_path);
            return outcome;
        }
    }
    const auto changes = schema.changes(running, fresh);
    config::ReloadResult result;
    if (process.reload) result = process.reload(fresh, schema.reloading(changes));
    const auto steps = schema.apply_reload(changes, result, fresh, running);
    for (const auto& step : steps) {
        if (step.change.key == "log.level" && step.verdict == config::ReloadVerdict::kApplied)
            log::set_level(running.log_level, options.verbosity);
    }
    log_reload(steps);
    outcome.record(steps);
    return outcome;
}

}  // namespace detail

// Loads the configuration and runs `preflight` on it (the checks that read files or
// depend on the command line) and the log file check, all in one pass: a bad value
// does not hide the other keys' problems. False after printing every error to stderr.
template <class Config>
bool load_checked_config(const DaemonOptions& options, const config::Schema<Config>& schema,
                         const std::function<std::string(const Config&)>& process_name,
                         const std::function<config::Problems(const Config&)>& preflight,
                         Config& config) {
    std::vector<config::ConfigError> errors;
    try {
        config = options.config_path.empty()
                     ? schema.defaults()
                     : schema.load_file_collecting(options.config_path, errors);
        config::Problems problems = preflight ? preflight(config) : config::Problems{};
        config::check_log_file(
            "log.file", detail::log_file_path(config.log_file, process_name(config)), problems);
        config::add_unreported(errors, schema.positioned(problems, options.config_path));
    } catch (const config::ConfigErrors& thrown) {
        errors = thrown.errors();
    }
    for (const auto& error : errors) std::cerr << error.to_string() << "\n";
    if (errors.empty()) return true;
    std::cerr << errors.size() << " configuration error(s); not starting\n";
    return false;
}

// `make_process` builds the daemon on the loop and returns its signal hooks.
// `process_name` may depend on options (instance N). `preflight` runs the checks
// that need no running system beyond the schema's own rules (files load, ports with
// the instance offset). Exit status 2 for any configuration error, at start-up or
// with --check-config, so systemd does not restart a daemon that cannot start.
template <class Config>
int run_daemon(int argc, char** argv, cli::CommandLine& command_line, DaemonOptions& options,
               const config::Schema<Config>& schema,
               const std::function<std::string(const Config&)>& process_name,
               const std::function<config::Problems(const Config&)>& preflight,
               const std::function<DaemonProcess<Config>(EventLoop&, Config&)>& make_process) {
    const auto outcome = command_line.parse(argc, argv, std::cout, std::cerr);
    if (outcome != cli::CommandLine::Outcome::kRun) {
        return outcome == cli::CommandLine::Outcome::kExitSuccess ? 0 : 2;
    }
    if (options.help_config) {
        std::cout << schema.describe();
        return 0;
    }
    Config config;
    if (!load_checked_config(options, schema, process_name, preflight, config)) return 2;
    if (options.check_config) {
        std::cout << (options.config_path.empty() ? "(defaults)" : options.config_path)
                  << ": configuration OK\n";
        return 0;
    }
    const std::string name = process_name(config);
    try {
        log::init(name, config.log_level, options.verbosity,
                  detail::log_file_path(config.log_file, name), config.log_max_file_bytes,
                  config.log_max_files, config.log_format);
    } catch (const std::exception& error) {
        std::cerr << name << ": cannot open the log file: " << error.what() << "\n";
        return 1;
    }
    std::signal(SIGPIPE, SIG_IGN);
    // Output queues fill and empty every flush: their pages stay mapped (heap_retention.h).
    if (!retain_freed_heap(kRetainedHeapBytes)) {
        log::get("main")->warn("freed heap not retained: the allocator refused M_TRIM_THRESHOLD");
    }
    if (config.process_sched_slice_us != 0) {  // before any thread starts: they inherit it
        std::string why;
        if (apply_sched_slice(config.process_sched_slice_us, why)) {
            log::get("main")->info("scheduler slice {} µs (process.sched_slice_us)",
                                   config.process_sched_slice_us);
        } else {
            log::get("main")->warn("process.sched_slice_us {} not applied: {}",
                                   config.process_sched_slice_us, why);
        }
    }
    try {
        EventLoop loop;
        SystemdNotifier systemd(loop);  // Type=notify units; does nothing outside systemd
        DaemonProcess<Config> process = make_process(loop, config);
        auto stop = [&](const std::string& why) {
            systemd.stopping("stopping on " + why);
            process.shutdown(why);
        };
        loop.on_signal(SIGTERM, [&] { stop("SIGTERM"); });
        loop.on_signal(SIGINT, [&] { stop("SIGINT"); });
        // SIGHUP and POST /reload (the admin endpoint calls the hook on this loop).
        reload_hook() = [&] {
            systemd.reloading();
            ReloadOutcome done = detail::reload_daemon(options, schema, config, process);
            reload_counters().count(done);
            systemd.ready("reloaded");
            return done;
        };
        const struct HookReset {
            ~HookReset() { reload_hook() = nullptr; }  // before what it refers to goes
        } hook_reset;
        loop.on_signal(SIGHUP, [] { reload_hook()(); });
        systemd.ready(name + " running" +
                      (options.config_path.empty() ? "" : " with " + options.config_path));
        loop.run();
    } catch (const config::ConfigErrors& errors) {
        for (const auto& error : errors.errors())
            log::get("main")->critical("{}: {}", name, error.to_string());
        return 2;
    } catch (const std::exception& error) {
        log::get("main")->critical("{}: {}", name, error.what());
        return 1;
    }
    log::get("main")->info("stopped");
    return 0;
}

}  // namespace mdcast
