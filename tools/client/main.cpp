// mdcast-client: test client (see client_app.h).
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "client_app.h"
#include "common/config/command_line.h"
#include "common/net/host_port.h"
#include "tools/credentials.h"
#include "tools/sample_file.h"
#include "tools/sample_items.h"
#include "tools/tls_options.h"
#include "tools/tool_main.h"

namespace {

std::vector<std::string> split(const std::string& text) {
    std::vector<std::string> parts;
    std::stringstream in(text);
    std::string part;
    while (std::getline(in, part, ',')) {
        if (!part.empty()) parts.push_back(part);
    }
    return parts;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace mdcast;
    tools::ClientOptions options;
    std::string servers = "127.0.0.1:14002", item_list, item_file, view_names, output = "text";
    std::string dictionary_path, log_level = "info", prefix = "ITEM";
    int64_t item_count = 0;
    int64_t conflate_ms = 0;
    int verbosity = 0;
    std::string password_file;
    cli::CommandLine command_line(
        "mdcast-client",
        "Subscribes to items on mdcast-server instances over one or more connections, prints what "
        "arrives (text or JSON lines), checks per-item sequence numbers and measures latency "
        "from the publish stamp (start-up and steady state apart). Prints a JSON summary at the "
        "end.");
    command_line
        .option("server", &servers, "HOST:PORT,...",
                "Servers; connection i goes to server i mod count")
        .option("connections", &options.connections, "N",
                "Connections, each subscribing every item", 1, 100000)
        .option("service", &options.service, "NAME", "Service of the items")
        .option("items", &item_list, "A,B,...", "Comma-separated item names")
        .option("item-file", &item_file, "FILE",
                "Item names from a file (one per line, or a sample .yaml)")
        .option("item-count", &item_count, "N", "Subscribe PREFIX000000 .. PREFIX(N-1)", 0,
                10'000'000)
        .option("item-prefix", &prefix, "TEXT", "Prefix for --item-count names")
        .flag("snapshot", &options.snapshot, "One image per item, no updates")
        .option("view", &view_names, "F1,F2,...", "Only these fields (dictionary names)")
        .option("conflate-ms", &conflate_ms, "MS",
                "At most one update per item every MS milliseconds, the ones between merged "
                "(0: every update)",
                0, 60'000)
        .option("output", &output, "FORMAT", "text, json or none")
        .option("duration", &options.duration_s, "SECONDS", "Run time (0: until SIGINT/--count)", 0,
                1e7)
        .option("warmup", &options.warmup_s, "SECONDS",
                "Latency before this counts as start-up, not steady state", 0, 1e7)
        .option("count", &options.count, "N", "Stop after N updates in all", 0, INT64_MAX)
        .option("stats-interval", &options.stats_interval_s, "SECONDS",
                "Periodic stats line on stderr (0: off)", 0, 3600)
        .option("csv", &options.csv_path, "FILE", "Write each stats interval as a CSV row to FILE")
        .option("dictionary", &dictionary_path, "FILE",
                "Field dictionary (default: etc/fields.dict)")
        .option("user", &options.session.user, "NAME", "User name for the login")
        .option("password-file", &password_file, "FILE",
                "Login password: the first line of FILE (default: $MDCAST_PASSWORD; never on the "
                "command line)")
        .option("log-level", &log_level, "LEVEL", "trace, debug, info, warn, error")
        .counter('v', "verbose", &verbosity, "More logging");
    tools::ToolTlsOptions tls;
    tools::add_tls_options(command_line, tls);
    const auto outcome = command_line.parse(argc, argv, std::cout, std::cerr);
    if (outcome != cli::CommandLine::Outcome::kRun) {
        return outcome == cli::CommandLine::Outcome::kExitSuccess ? 0 : 2;
    }
    if (std::string error; !tools::load_password(password_file, options.session.password, error)) {
        std::cerr << "mdcast-client: error: " << error << "\n";
        return 2;
    }
    const auto fail = [](const std::string& message) {
        std::cerr << "mdcast-client: error: " << message << "\n";
        return 2;
    };
    for (const auto& server : split(servers)) {
        HostPort endpoint;
        if (!parse_host_port(server, endpoint))
            return fail("--server must be HOST:PORT[,HOST:PORT...], got '" + server + "'");
        options.servers.emplace_back(endpoint.host, endpoint.port);
    }
    if (options.servers.empty()) return fail("--server: no server given");
    options.session.application_id = "mdcast-client";
    try {
        options.session.tls = tools::tls_context(tls);
        options.session.tls_server_name = tls.server_name;
    } catch (const std::exception& error) {
        return fail(error.what());
    }
    options.items = split(item_list);
    if (!item_file.empty()) {
        try {
            for (const auto& item : tools::load_sample_file(item_file))
                options.items.push_back(item.name);
        } catch (const std::exception& error) {
            return fail(error.what());
        }
    }
    options.conflate_ms = static_cast<uint32_t>(conflate_ms);
    for (int64_t i = 0; i < item_count; ++i)
        options.items.push_back(tools::item_name(prefix, static_cast<uint64_t>(i)));
    if (options.items.empty()) return fail("no items: use --items, --item-file or --item-count");
    tools::OutputFormat format;
    if (output == "text")
        format = tools::OutputFormat::kText;
    else if (output == "json")
        format = tools::OutputFormat::kJson;
    else if (output == "none")
        format = tools::OutputFormat::kNone;
    else
        return fail("--output must be text, json or none");
    proto::FieldDictionary dictionary;
    try {
        dictionary = proto::FieldDictionary::load_file(tools::find_dictionary(dictionary_path));
    } catch (const std::exception& error) {
        return fail(error.what());
    }
    for (const auto& name : split(view_names)) {
        const auto* field = dictionary.find(name);
        if (!field) return fail("--view: no field named '" + name + "' in the dictionary");
        options.view.push_back(field->id);
    }
    tools::ItemPrinter printer(format, dictionary, stdout);
    return tools::run_tool<tools::ClientApp>(
        "mdcast-client", log_level, verbosity, [&](EventLoop& loop) {
            return std::make_unique<tools::ClientApp>(loop, options, printer);
        });
}
