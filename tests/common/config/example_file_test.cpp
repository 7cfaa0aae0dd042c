// Schema::check_example: an example file shows every key with its default and
// marks exactly the keys that reload with [reloads] on their line.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "common/config/config_schema.h"

namespace {

using mdcast::config::ConfigError;
using mdcast::config::Schema;

struct ExampleConfig {
    uint32_t port = 0;
    uint32_t max_connections = 0;
    std::string name;
};

Schema<ExampleConfig> example_schema() {
    Schema<ExampleConfig> schema("mdcast-example");
    schema.integer("listen.port", &ExampleConfig::port, 9000, 1, 65535, "TCP port.")
        .integer("listen.max_connections", &ExampleConfig::max_connections, 100, 1, 1000,
                 "Connections at once.")
        .reloads()
        .string("name", &ExampleConfig::name, "mdcast", "Instance name.");
    return schema;
}

const std::string kGoodExample =
    "# An example: every key with its default, marked where a SIGHUP applies it.\n"
    "listen:\n"
    "  port: 9000            # TCP port\n"
    "  max_connections: 100  # more are refused [reloads]\n"
    "name: mdcast\n";

// The errors of `text` as "line: key: message", one per error.
std::vector<std::string> problems_of(const std::string& text) {
    std::vector<std::string> result;
    for (const ConfigError& error : example_schema().check_example(text, "example.yaml")) {
        result.push_back(std::to_string(error.line) + ": " + error.key + ": " + error.message);
    }
    return result;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("an example with every key, its default and the reload marks passes", "[config]") {
    CHECK(problems_of(kGoodExample).empty());
}

TEST_CASE("an example lacking a key is told which one", "[config]") {
    const auto problems = problems_of(replaced(kGoodExample, "name: mdcast\n", ""));
    REQUIRE(problems.size() == 1);
    CHECK(problems[0] == "0: name: missing: the example shows every key with its default");
}

TEST_CASE("an example value that is not the default is reported at its line", "[config]") {
    const auto problems = problems_of(replaced(kGoodExample, "port: 9000", "port: 9001"));
    REQUIRE(problems.size() == 1);
    CHECK(problems[0] == "3: listen.port: shows 9001, not the default 9000");
}

TEST_CASE("the [reloads] mark is on exactly the lines of keys that reload", "[config]") {
    auto problems = problems_of(replaced(kGoodExample, " [reloads]", ""));
    REQUIRE(problems.size() == 1);
    CHECK(problems[0] ==
          "4: listen.max_connections: reloads on SIGHUP: its line's comment must say [reloads]");
    problems = problems_of(replaced(kGoodExample, "# TCP port", "# TCP port [reloads]"));
    REQUIRE(problems.size() == 1);
    CHECK(problems[0] == "3: listen.port: needs a restart, but its line says [reloads]");
}

TEST_CASE("an example the schema refuses gives the load errors", "[config]") {
    const auto problems = problems_of(kGoodExample + "listen_typo: 1\n");
    REQUIRE(problems.size() == 1);
    CHECK_THAT(problems[0], Catch::StartsWith("6: listen_typo: unknown key"));
}
