// mdcast-distributor: the source distributor. Publishers connect over TCP; their
// updates go onto the multicast backbone for every fanout server.
#include "common/daemon/daemon_main.h"
#include "distributor/distributor.h"

int main(int argc, char** argv) {
    using namespace mdcast;
    using distributor::DistributorConfig;
    DaemonOptions options;
    cli::CommandLine command_line(
        "mdcast-distributor",
        "Accepts publisher connections, assigns item ids, caches images, and multicasts "
        "refreshes, updates and status onto the backbone for mdcast-server instances.");
    add_daemon_options(command_line, options);
    return run_daemon<DistributorConfig>(
        argc, argv, command_line, options, distributor::distributor_schema(),
        [](const DistributorConfig&) { return std::string("mdcast-distributor"); },
        [](EventLoop& loop, DistributorConfig& config) {
            auto process = std::make_shared<distributor::Distributor>(loop, config);
            return DaemonProcess<DistributorConfig>{
                [process](const std::string& why) { process->shutdown(why); },
                [process](const DistributorConfig& fresh,
                          const std::vector<config::ConfigChange>& changes) {
                    return process->reload(fresh, changes);
                }};
        });
}
