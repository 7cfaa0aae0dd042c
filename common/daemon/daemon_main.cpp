#include "common/daemon/daemon_main.h"

namespace mdcast {

std::vector<std::string>& keys_waiting_for_restart() {
    static std::vector<std::string> keys;
    return keys;
}

namespace detail {

void log_reload(const std::vector<config::ReloadStep>& steps) {
    auto logger = log::get("main");
    keys_waiting_for_restart().clear();
    for (const auto& [change, verdict] : steps) {
        switch (verdict) {
            case config::ReloadVerdict::kApplied:
                logger->info("SIGHUP: applied {}: {} -> {}", change.key, change.before,
                             change.after);
                break;
            case config::ReloadVerdict::kFailed:
                logger->error(
                    "SIGHUP: {} changed ({} -> {}) but its files did not load (see above); "
                    "the running value stays",
                    change.key, change.before, change.after);
                break;
            case config::ReloadVerdict::kRestart:
                logger->warn("SIGHUP: {} changed ({} -> {}) but needs a restart; not applied",
                             change.key, change.before, change.after);
                keys_waiting_for_restart().push_back(change.key);
                break;
        }
    }
    if (steps.empty()) logger->info("SIGHUP: configuration unchanged");
}

}  // namespace detail

void add_daemon_options(cli::CommandLine& command_line, DaemonOptions& options) {
    command_line.option("config", &options.config_path, "FILE",
                        "YAML configuration file (default: built-in defaults)");
    command_line.flag("check-config", &options.check_config,
                      "Validate the configuration, report every error, and exit");
    command_line.flag("help-config", &options.help_config,
                      "Print every configuration key with its type, default, range, meaning and "
                      "whether SIGHUP reloads it");
    command_line.counter('v', "verbose", &options.verbosity,
                         "More logging (-v debug, -vv trace); adds to log.level");
}

}  // namespace mdcast
