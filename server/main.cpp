// mdcast-server: a multiplexed fanout server instance. Joins the backbone,
// caches items and serves client applications over TCP.
#include "common/daemon/daemon_main.h"
#include "server/server.h"

int main(int argc, char** argv) {
    using namespace mdcast;
    using server::ServerConfig;
    DaemonOptions options;
    int64_t instance = 1;
    cli::CommandLine command_line(
        "mdcast-server",
        "Fanout server: joins the multicast backbone, caches every item, and serves "
        "subscribers over TCP. Run several instances per host (--instance N), one per core.");
    add_daemon_options(command_line, options);
    command_line.option("instance", &instance, "N",
                        "Instance number: client port is clients.port + N - 1", 1, 64);
    return run_daemon<ServerConfig>(
        argc, argv, command_line, options, server::server_schema(),
        [&](const ServerConfig&) { return "mdcast-server." + std::to_string(instance); },
        [&](EventLoop& loop, ServerConfig& config) {
            config.instance = static_cast<uint32_t>(instance);
            auto process = std::make_shared<server::Server>(loop, config);
            return DaemonProcess<ServerConfig>{
                [process](const std::string& why) { process->shutdown(why); },
                [process](const ServerConfig& fresh,
                          const std::vector<config::ConfigChange>& changes) {
                    return process->reload(fresh, changes);
                }};
        });
}
