// The start-up sequence every daemon shares: command line, config (with
// --check-config), logging, signals, run. Exceptions stop at this edge.
#pragma once

#include <csignal>
#include <functional>
#include <iostream>
#include <memory>
#include <string>

#include "common/command_line.h"
#include "common/config_schema.h"
#include "common/event_loop.h"
#include "common/logging.h"
#include "common/systemd_notify.h"

namespace mdcast {

struct DaemonOptions {
    std::string config_path;
    bool check_config = false;
    bool help_config = false;
    int verbosity = 0;
};

// Adds the options every daemon has (--config, --check-config, --help-config, -v).
void add_daemon_options(cli::CommandLine& command_line, DaemonOptions& options);

// `make_process` builds the daemon on the loop and returns a shutdown function
// (called on SIGTERM/SIGINT). `process_name` may depend on options (instance N).
template <class Config>
int run_daemon(int argc, char** argv, cli::CommandLine& command_line, DaemonOptions& options,
               const config::Schema<Config>& schema,
               const std::function<std::string(const Config&)>& process_name,
               const std::function<std::function<void(const std::string&)>(EventLoop&, Config&)>&
                   make_process) {
    const auto outcome = command_line.parse(argc, argv, std::cout, std::cerr);
    if (outcome != cli::CommandLine::Outcome::kRun) {
        return outcome == cli::CommandLine::Outcome::kExitSuccess ? 0 : 2;
    }
    if (options.help_config) {
        std::cout << schema.describe();
        return 0;
    }
    Config config;
    try {
        config = options.config_path.empty() ? schema.defaults() : schema.load_file(options.config_path);
    } catch (const config::ConfigErrors& errors) {
        for (const auto& error : errors.errors()) std::cerr << error.to_string() << "\n";
        std::cerr << errors.errors().size() << " configuration error(s); not starting\n";
        return 2;
    }
    if (options.check_config) {
        std::cout << (options.config_path.empty() ? "(defaults)" : options.config_path)
                  << ": configuration OK\n";
        return 0;
    }
    const std::string name = process_name(config);
    log::init(name, config.log_level, options.verbosity);
    std::signal(SIGPIPE, SIG_IGN);
    try {
        EventLoop loop;
        SystemdNotifier systemd(loop);  // Type=notify units; does nothing outside systemd
        auto shutdown = make_process(loop, config);
        auto stop = [&](const std::string& why) {
            systemd.stopping("stopping on " + why);
            shutdown(why);
        };
        loop.on_signal(SIGTERM, [&] { stop("SIGTERM"); });
        loop.on_signal(SIGINT, [&] { stop("SIGINT"); });
        systemd.ready(name + " running" +
                      (options.config_path.empty() ? "" : " with " + options.config_path));
        loop.run();
    } catch (const std::exception& error) {
        log::get("main")->critical("{}: {}", name, error.what());
        return 1;
    }
    log::get("main")->info("stopped");
    return 0;
}

}  // namespace mdcast
