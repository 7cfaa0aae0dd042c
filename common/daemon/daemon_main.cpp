#include "common/daemon/daemon_main.h"

namespace mdcast {

void add_daemon_options(cli::CommandLine& command_line, DaemonOptions& options) {
    command_line.option("config", &options.config_path, "FILE",
                        "YAML configuration file (default: built-in defaults)");
    command_line.flag("check-config", &options.check_config,
                      "Validate the configuration, report every error, and exit");
    command_line.flag("help-config", &options.help_config,
                      "Print every configuration key with its type, default, range and meaning");
    command_line.counter('v', "verbose", &options.verbosity,
                         "More logging (-v debug, -vv trace); adds to log.level");
}

}  // namespace mdcast
