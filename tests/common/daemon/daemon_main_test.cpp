// The daemon plumbing reads everything about a key from its one schema row: a key
// added to a schema shows in --help-config with its reload flag, a SIGHUP applies it
// (or says it needs a restart) and the example-file check asks for it.
#include "common/daemon/daemon_main.h"

#include <spdlog/sinks/ostream_sink.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/daemon/daemon_keys.h"

namespace {

using namespace mdcast;

struct DemoConfig {
    std::string log_level;
    std::string log_format;
    std::string log_file;
    uint64_t log_max_file_bytes = 0;
    uint32_t log_max_files = 0;
    uint32_t process_sched_slice_us = 0;
    uint32_t port = 0;
    uint32_t max_connections = 0;
    uint32_t new_limit = 0;
};

config::Schema<DemoConfig> demo_schema() {
    config::Schema<DemoConfig> s("mdcast-demo");
    add_log_keys(s);
    add_process_keys(s);
    s.integer("demo.port", &DemoConfig::port, 9000, 1, 65535, "TCP port.")
        .integer("demo.max_connections", &DemoConfig::max_connections, 100, 1, 1000, "Limit.")
        .reloads();
    return s;
}

// etc/demo.yaml as it stands before the new key.
const std::string kDemoExample =
    "log:\n"
    "  level: info  # [reloads]\n"
    "  format: text\n"
    "  file: \"\"\n"
    "  max_file_bytes: 104857600\n"
    "  max_files: 5\n"
    "process:\n"
    "  sched_slice_us: 0\n"
    "demo:\n"
    "  port: 9000\n"
    "  max_connections: 100  # [reloads]\n";

// What `--help-config` prints for `schema`, through the daemons' own main.
std::string help_config(const config::Schema<DemoConfig>& schema) {
    DaemonOptions options;
    cli::CommandLine command_line("mdcast-demo", "A demo daemon.");
    add_daemon_options(command_line, options);
    char name[] = "mdcast-demo";
    char flag[] = "--help-config";
    char* argv[] = {name, flag, nullptr};
    std::ostringstream out;
    std::streambuf* const saved = std::cout.rdbuf(out.rdbuf());
    const int status = run_daemon<DemoConfig>(
        2, argv, command_line, options, schema, [](const DemoConfig&) { return "demo"; }, nullptr,
        [](EventLoop&, DemoConfig&) { return DaemonProcess<DemoConfig>{}; });
    std::cout.rdbuf(saved);
    CHECK(status == 0);
    return out.str();
}

struct TempConfig {
    std::string path;
    explicit TempConfig(const std::string& text) {
        char name[] = "/tmp/mdcast-daemon-main-XXXXXX";
        const int fd = mkstemp(name);
        REQUIRE(fd >= 0);
        close(fd);
        path = name;
        std::ofstream(path) << text;
    }
    ~TempConfig() { std::remove(path.c_str()); }
};

// A SIGHUP with `text` as the new file: the log lines it writes.
std::string sighup(const config::Schema<DemoConfig>& schema, DemoConfig& running,
                   const std::string& text, DaemonProcess<DemoConfig> process = {}) {
    const TempConfig file(text);
    DaemonOptions options;
    options.config_path = file.path;
    std::ostringstream log_text;
    log::redirect(std::make_shared<spdlog::sinks::ostream_sink_mt>(log_text));
    detail::reload_daemon(options, schema, running, process);
    log::redirect(nullptr);
    return log_text.str();
}

std::vector<std::string> error_keys(const std::vector<config::ConfigError>& errors) {
    std::vector<std::string> keys;
    for (const auto& error : errors) keys.push_back(error.key + ": " + error.message);
    return keys;
}

}  // namespace

TEST_CASE("a key added to the schema shows in --help-config, reload and the example check",
          "[config]") {
    auto schema = demo_schema();
    CHECK(schema.check_example(kDemoExample, "demo.yaml").empty());
    CHECK_THAT(help_config(schema), !Catch::Contains("demo.new_limit"));

    schema.integer("demo.new_limit", &DemoConfig::new_limit, 7, 1, 100, "A new limit.").reloads();

    CHECK_THAT(help_config(schema),
               Catch::Contains("demo.new_limit (integer, range 1..100; default 7; reloads on "
                               "SIGHUP)\n    A new limit.\n"));
    DemoConfig running = schema.defaults();
    const std::string log_text = sighup(schema, running, "demo:\n  new_limit: 9\n");
    CHECK(running.new_limit == 9);
    CHECK_THAT(log_text, Catch::Contains("SIGHUP: applied demo.new_limit: 7 -> 9"));
    CHECK(error_keys(schema.check_example(kDemoExample, "demo.yaml")) ==
          std::vector<std::string>{
              "demo.new_limit: missing: the example shows every key with its default"});
    CHECK(error_keys(schema.check_example(kDemoExample + "  new_limit: 7\n", "demo.yaml")) ==
          std::vector<std::string>{
              "demo.new_limit: reloads on SIGHUP: its line's comment must say [reloads]"});
    CHECK(
        schema.check_example(kDemoExample + "  new_limit: 7  # [reloads]\n", "demo.yaml").empty());
}

TEST_CASE("a SIGHUP applies the keys that reload and lists the others as waiting for a restart",
          "[config]") {
    const auto schema = demo_schema();
    DemoConfig running = schema.defaults();
    const std::string log_text =
        sighup(schema, running, "demo:\n  port: 9100\n  max_connections: 5\nlog:\n  level: warn\n");
    CHECK(running.max_connections == 5);
    CHECK(running.log_level == "warn");
    CHECK(running.port == 9000);
    CHECK(keys_waiting_for_restart() == std::vector<std::string>{"demo.port"});
    CHECK_THAT(log_text, Catch::Contains("SIGHUP: demo.port changed (9000 -> 9100) but needs a "
                                         "restart; not applied"));
    log::set_level("info", 0);
}

TEST_CASE("a SIGHUP keeps the running value of a key the daemon's reload says failed", "[config]") {
    const auto schema = demo_schema();
    DemoConfig running = schema.defaults();
    std::vector<std::string> handed;
    DaemonProcess<DemoConfig> process;
    process.reload = [&handed](const DemoConfig&,
                               const std::vector<config::ConfigChange>& changes) {
        for (const auto& change : changes) handed.push_back(change.key);
        return config::ReloadResult{{"demo.max_connections"}, {}};
    };
    const std::string log_text =
        sighup(schema, running, "demo:\n  port: 9100\n  max_connections: 5\n", process);
    CHECK(handed == std::vector<std::string>{"demo.max_connections"});  // only keys that reload
    CHECK(running.max_connections == 100);
    CHECK_THAT(log_text, Catch::Contains("SIGHUP: demo.max_connections changed (100 -> 5) but its "
                                         "files did not load"));
    CHECK(sighup(schema, running, kDemoExample).find("SIGHUP: configuration unchanged") !=
          std::string::npos);
    CHECK(keys_waiting_for_restart().empty());
}
