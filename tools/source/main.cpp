// mdcast-source: paced load publisher (see source_app.h).
#include <iostream>

#include "common/config/command_line.h"
#include "common/net/host_port.h"
#include "interactive_source.h"
#include "source_app.h"
#include "tools/credentials.h"
#include "tools/tls_options.h"
#include "tools/tool_main.h"

namespace {

// --interactive: the same options on the SDK's Publisher (interactive_source.h).
int run_interactive(const mdcast::tools::SourceOptions& options, const std::string& distributor,
                    const mdcast::tools::ToolTlsOptions& tls, const std::string& log_level,
                    int verbosity) {
    using namespace mdcast;
    PublisherOptions publisher;
    try {
        publisher.distributors = parse_server_list(distributor);
    } catch (const std::exception& error) {
        std::cerr << "mdcast-source: error: --distributor: " << error.what() << "\n";
        return 2;
    }
    publisher.user = options.session.user;
    publisher.password = options.session.password;
    publisher.application_id = options.session.application_id;
    publisher.tls.enabled = tls.enabled;
    publisher.tls.ca_file = tls.ca_file;
    publisher.tls.cert_file = tls.cert_file;
    publisher.tls.key_file = tls.key_file;
    publisher.tls.server_name = tls.server_name;
    publisher.tls.insecure_skip_verify = tls.insecure_skip_verify;
    return tools::run_tool<tools::InteractiveSourceApp>(
        "mdcast-source", log_level, verbosity, [&](EventLoop& loop) {
            return std::make_unique<tools::InteractiveSourceApp>(loop, options, publisher);
        });
}

}  // namespace

int main(int argc, char** argv) {
    using namespace mdcast;
    tools::SourceOptions options;
    std::string distributor = "127.0.0.1:14001";
    std::string log_level = "info";
    int verbosity = 0;
    bool no_stamp = false;
    bool interactive = false;
    std::string item_file, dictionary_path;
    int64_t seed = 1;
    std::string password_file, takeover_secret_file;
    int64_t standby_rank = 0;
    cli::CommandLine command_line(
        "mdcast-source",
        "Publishes N items (or the items of a sample file) to mdcast-distributor at a paced "
        "update rate, updates stamped with their publish time (CLOCK_REALTIME) for latency "
        "measurement. Values are a deterministic function of item and sequence (see "
        "docs/tools.md). Prints a JSON summary line on stdout at the end.");
    command_line.option("distributor", &distributor, "HOST:PORT", "Distributor publisher port")
        .option("service", &options.service, "NAME", "Service to announce")
        .flag("interactive", &interactive,
              "Sink-driven: announce the service as interactive, answer item requests with "
              "images and publish --rate over the requested items only")
        .option("item-prefix", &options.item_prefix, "TEXT", "Item names are PREFIX000000, ...")
        .option("items", &options.items, "N", "Number of items (0: books only)", 0, 10'000'000)
        .option("books", &options.books, "N",
                "Also publish N MarketByPrice books, BOOK000000 ... (docs/books.md, \"Tools\")", 0,
                100'000)
        .option("book-prefix", &options.book_prefix, "TEXT", "Book names are PREFIX000000, ...")
        .option("book-levels", &options.book_levels, "L",
                "Price levels of each book: L in its refresh, between L/2 and L after", 1, 10'000)
        .flag("print-books", &options.print_books,
              "At the end print each book as it stands, a JSON line each, before the summary")
        .option("item-file", &item_file, "FILE",
                "Items (and their image fields) from a sample file instead of --items")
        .option("dictionary", &dictionary_path, "FILE",
                "Field dictionary for the sample file (default: etc/fields.dict)")
        .option("update-bytes", &options.update_bytes, "BYTES",
                "Pad each update's body to this size (0: natural size)", 0, 60000)
        .option("trade-every", &options.trade_every, "N",
                "Mark every Nth update of each item a trade (Update.trade; 0: none)", 0, INT64_MAX)
        .option("rate", &options.rate, "PER_SEC", "Updates per second over all items", 0, 1e8)
        .option("duration", &options.duration_s, "SECONDS", "Run time (0: until SIGINT)", 0, 1e7)
        .option("tick-us", &options.tick_us, "MICROS", "Pacing tick", 10, 1'000'000)
        .option("max-batch", &options.max_batch, "N", "Most updates sent in one tick", 1,
                10'000'000)
        .flag("no-stamp", &no_stamp, "Do not embed publish timestamps")
        .option("latency-rate", &options.latency_rate, "PER_SEC",
                "Stamp only this many updates per second, at random (default: all)", 0, 1e9)
        .option("seed", &seed, "N", "Seed for the random choice of stamped updates", 0, INT64_MAX)
        .option("user", &options.session.user, "NAME", "User name for the login")
        .option("password-file", &password_file, "FILE",
                "Login password: the first line of FILE (default: $MDCAST_PASSWORD; never on the "
                "command line)")
        .option("takeover-secret-file", &takeover_secret_file, "FILE",
                "The distributor's publishers.takeover_secret_file: with it this source takes "
                "its service from an earlier connection of its user still registered there")
        .option("standby-rank", &standby_rank, "N",
                "Join the service as a standby of rank N (1 or more, lower preferred) when "
                "another publisher of it is connected to the distributor (needs "
                "--takeover-secret-file or an authenticated login as the same user); 0: none",
                0, 1000000)
        .option("log-level", &log_level, "LEVEL", "trace, debug, info, warn, error")
        .counter('v', "verbose", &verbosity, "More logging");
    tools::ToolTlsOptions tls;
    tools::add_tls_options(command_line, tls);
    const auto outcome = command_line.parse(argc, argv, std::cout, std::cerr);
    if (outcome != cli::CommandLine::Outcome::kRun) {
        return outcome == cli::CommandLine::Outcome::kExitSuccess ? 0 : 2;
    }
    options.standby_rank = static_cast<uint32_t>(standby_rank);
    if (std::string error; !tools::load_password(password_file, options.session.password, error)) {
        std::cerr << "mdcast-source: error: " << error << "\n";
        return 2;
    }
    if (std::string error;
        !takeover_secret_file.empty() &&
        !tools::load_password(takeover_secret_file, options.takeover_secret, error)) {
        std::cerr << "mdcast-source: error: " << error << "\n";
        return 2;
    }
    HostPort endpoint;
    if (!parse_host_port(distributor, endpoint)) {
        std::cerr << "mdcast-source: error: --distributor must be HOST:PORT, got '" << distributor
                  << "'\n";
        return 2;
    }
    options.session.host = endpoint.host;
    options.session.port = endpoint.port;
    options.stamp = !no_stamp;
    options.seed = static_cast<uint64_t>(seed);
    if (!item_file.empty()) {
        try {
            options.sample_items = tools::load_sample_file(item_file);
            options.dictionary =
                proto::FieldDictionary::load_file(tools::find_dictionary(dictionary_path));
            wire::v1::FieldList check;  // report template errors now, not at the first refresh
            for (const auto& item : options.sample_items) {
                tools::add_template_fields(item, options.dictionary, item_file, check);
            }
        } catch (const std::exception& error) {
            std::cerr << "mdcast-source: error: " << error.what() << "\n";
            return 2;
        }
        if (options.sample_items.empty()) {
            std::cerr << "mdcast-source: error: " << item_file << ": no items\n";
            return 2;
        }
        options.sample_file = item_file;
    }
    if (options.items == 0 && options.books == 0 && item_file.empty()) {
        std::cerr << "mdcast-source: error: nothing to publish: --items 0 and no --books\n";
        return 2;
    }
    if (interactive && options.books > 0) {
        std::cerr << "mdcast-source: error: --books is not available with --interactive\n";
        return 2;
    }
    options.session.application_id = "mdcast-source";
    if (interactive) return run_interactive(options, distributor, tls, log_level, verbosity);
    try {
        options.session.tls = tools::tls_context(tls);
        options.session.tls_server_name = tls.server_name;
    } catch (const std::exception& error) {
        std::cerr << "mdcast-source: error: " << error.what() << "\n";
        return 2;
    }
    return tools::run_tool<tools::SourceApp>(
        "mdcast-source", log_level, verbosity,
        [&](EventLoop& loop) { return std::make_unique<tools::SourceApp>(loop, options); });
}
