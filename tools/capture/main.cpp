// mdcast-capture: records the backbone into pcap files (see capture_app.h).
#include <iostream>

#include "common/config/command_line.h"
#include "common/net/host_port.h"
#include "tools/capture/capture_app.h"
#include "tools/tool_main.h"

int main(int argc, char** argv) {
    using namespace mdcast;
    tools::CaptureOptions options;
    std::string groups;
    std::string interface_address = "127.0.0.1";
    std::string log_level = "info";
    int verbosity = 0;
    int64_t max_file_bytes = 0, max_files = 0, max_packets = 0;
    int64_t receive_buffer = options.receive_buffer_bytes;
    cli::CommandLine command_line(
        "mdcast-capture",
        "Joins the backbone's multicast groups without taking part (no NAKs, no requests) and "
        "writes every datagram to a pcap file with nanosecond receive timestamps, as "
        "Ethernet/IPv4/UDP frames Wireshark opens (tools/wireshark/mdcast.lua decodes them). "
        "Prints a JSON summary line on stdout at the end: packets, updates, items, gaps per "
        "source.");
    command_line.option("groups", &groups, "GROUP:PORT,...", "Backbone groups to join (required)")
        .option("interface", &interface_address, "ADDRESS",
                "Local address of the interface to join on")
        .option("write", &options.path, "FILE", "Capture file (required)")
        .option("max-file-bytes", &max_file_bytes, "BYTES",
                "Start a new file (FILE.1.pcap, ...) when this size is reached (0: one file)", 0,
                INT64_MAX)
        .option("max-files", &max_files, "N", "Keep only the newest N files (0: all)", 0, 100000)
        .option("duration", &options.duration_s, "SECONDS", "Stop after this long (0: at SIGINT)",
                0, 1e7)
        .option("max-packets", &max_packets, "N", "Stop after this many packets (0: no limit)", 0,
                INT64_MAX)
        .option("receive-buffer", &receive_buffer, "BYTES", "Socket receive buffer (SO_RCVBUF)", 0,
                1 << 30)
        .option("log-level", &log_level, "LEVEL", "trace, debug, info, warn, error")
        .counter('v', "verbose", &verbosity, "More logging");
    const auto outcome = command_line.parse(argc, argv, std::cout, std::cerr);
    if (outcome != cli::CommandLine::Outcome::kRun) {
        return outcome == cli::CommandLine::Outcome::kExitSuccess ? 0 : 2;
    }
    std::vector<HostPort> endpoints;
    std::string error;
    if (groups.empty() || options.path.empty()) {
        std::cerr << "mdcast-capture: error: --groups and --write are required\n";
        return 2;
    }
    if (!parse_host_port_list(groups, endpoints, error)) {
        std::cerr << "mdcast-capture: error: --groups: " << error << "\n";
        return 2;
    }
    for (const HostPort& endpoint : endpoints) {
        MulticastEndpoint group;
        group.group = endpoint.host;
        group.port = endpoint.port;
        group.interface_address = interface_address;
        options.groups.push_back(group);
    }
    options.max_file_bytes = static_cast<uint64_t>(max_file_bytes);
    options.max_files = static_cast<uint32_t>(max_files);
    options.max_packets = static_cast<uint64_t>(max_packets);
    options.receive_buffer_bytes = static_cast<int>(receive_buffer);
    return tools::run_tool<tools::CaptureApp>(
        "mdcast-capture", log_level, verbosity,
        [&](EventLoop& loop) { return std::make_unique<tools::CaptureApp>(loop, options); });
}
