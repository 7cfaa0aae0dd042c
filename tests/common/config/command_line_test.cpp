#include "common/config/command_line.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using mdcast::cli::CommandLine;
using Outcome = CommandLine::Outcome;

constexpr const char* kTryHelp = "\nTry 'mdcast-test --help'.\n";

// Every kind of option, with the defaults a daemon would declare.
struct Fixture {
    std::string config_path = "/etc/mdcast/server.yaml";
    std::string name;
    int64_t port = 9000;
    int64_t offset = 0;
    double ratio = 0.5;
    bool dry_run = false;
    int verbosity = 0;
    CommandLine command_line{"mdcast-test", "Serves market data to TCP clients for the tests."};
    std::ostringstream out;
    std::ostringstream err;

    Fixture() {
        command_line.option("config", &config_path, "FILE", "Path to the YAML config.")
            .option("name", &name, "NAME", "Instance name.")
            .option("port", &port, "N", "TCP port.", 1, 65535)
            .option("offset", &offset, "US", "Clock offset.", -100, 100)
            .option("ratio", &ratio, "R", "Sampling ratio.", 0.0, 1.0)
            .flag("dry-run", &dry_run, "Check the config and exit.")
            .counter('v', "verbose", &verbosity, "More log output; repeat for more.");
    }

    Outcome parse(std::vector<const char*> args) {
        args.insert(args.begin(), "mdcast-test");
        return command_line.parse(static_cast<int>(args.size()), args.data(), out, err);
    }
};

}  // namespace

TEST_CASE("no arguments keeps the defaults", "[cli]") {
    Fixture f;
    CHECK(f.parse({}) == Outcome::kRun);
    CHECK(f.config_path == "/etc/mdcast/server.yaml");
    CHECK(f.port == 9000);
    CHECK(f.ratio == 0.5);
    CHECK_FALSE(f.dry_run);
    CHECK(f.verbosity == 0);
    CHECK(f.out.str().empty());
    CHECK(f.err.str().empty());
}

TEST_CASE("values are accepted as --name value and --name=value", "[cli]") {
    Fixture f;
    REQUIRE(f.parse({"--config", "a.yaml", "--port=8080", "--ratio", "0.25", "--offset", "-5",
                     "--name=", "--dry-run"}) == Outcome::kRun);
    CHECK(f.config_path == "a.yaml");
    CHECK(f.port == 8080);
    CHECK(f.ratio == 0.25);
    CHECK(f.offset == -5);
    CHECK(f.name.empty());
    CHECK(f.dry_run);
    CHECK(f.err.str().empty());

    Fixture g;
    REQUIRE(g.parse({"--config=b=c.yaml", "--port", "+1", "--ratio=1"}) == Outcome::kRun);
    CHECK(g.config_path == "b=c.yaml");
    CHECK(g.port == 1);
    CHECK(g.ratio == 1.0);
}

TEST_CASE("the last occurrence of an option wins", "[cli]") {
    Fixture f;
    REQUIRE(f.parse({"--port", "1", "--port", "2"}) == Outcome::kRun);
    CHECK(f.port == 2);
}

TEST_CASE("counters count every -v and --verbose", "[cli]") {
    Fixture f;
    REQUIRE(f.parse({"-vv", "-v", "--verbose"}) == Outcome::kRun);
    CHECK(f.verbosity == 4);
}

TEST_CASE("help option prints aligned usage with defaults and exits successfully", "[cli]") {
    Fixture f;
    REQUIRE(f.parse({"--help"}) == Outcome::kExitSuccess);
    const std::string help = f.out.str();
    CHECK(f.err.str().empty());
    CHECK(help == f.command_line.usage());
    CHECK_THAT(help, Catch::StartsWith("Usage: mdcast-test [OPTIONS]\n"));
    CHECK_THAT(help, Catch::Contains("Serves market data to TCP clients for the tests."));
    CHECK_THAT(help, Catch::Contains("--config FILE  Path to the YAML config. "
                                     "(default: /etc/mdcast/server.yaml)\n"));
    CHECK_THAT(help, Catch::Contains("--port N       TCP port. (range: 1..65535) (default: 9000)"));
    CHECK_THAT(help, Catch::Contains("(range: 0..1) (default: 0.5)"));
    CHECK_THAT(help, Catch::Contains("  -v, --verbose      More log output; repeat for more.\n"));
    CHECK_THAT(help, Catch::Contains("  -h, --help         Show this help and exit.\n"));
    CHECK_THAT(help, Catch::Contains("      --version      Print the version and exit.\n"));
    // Empty, zero and false defaults are not shown.
    CHECK_THAT(help, Catch::Contains("--name NAME    Instance name.\n"));
    CHECK_THAT(help, Catch::Contains("--offset US    Clock offset. (range: -100..100)\n"));
    CHECK_THAT(help, Catch::Contains("--dry-run      Check the config and exit.\n"));
}

TEST_CASE("help text columns line up and stay within 80 columns", "[cli]") {
    Fixture f;
    std::istringstream lines(f.command_line.usage());
    std::string line;
    size_t help_column = 0;
    while (std::getline(lines, line)) {
        CHECK(line.size() <= 80);
        if (line.rfind("  -", 0) != 0 && line.rfind("      --", 0) != 0) continue;
        size_t column = line.find("  ", line.find("--"));
        REQUIRE(column != std::string::npos);
        column = line.find_first_not_of(' ', column);
        if (help_column == 0) help_column = column;
        CHECK(column == help_column);
    }
    CHECK(help_column > 0);
}

TEST_CASE("short h is help and stops parsing", "[cli]") {
    Fixture f;
    CHECK(f.parse({"-h", "--bogus"}) == Outcome::kExitSuccess);
    CHECK_THAT(f.out.str(), Catch::StartsWith("Usage: mdcast-test"));
    CHECK(f.err.str().empty());
}

TEST_CASE("version option prints the program and version", "[cli]") {
    Fixture f;
    REQUIRE(f.parse({"--version"}) == Outcome::kExitSuccess);
#ifdef MDCAST_VERSION
    CHECK(f.out.str() == std::string("mdcast-test ") + MDCAST_VERSION + "\n");
#else
    CHECK_THAT(f.out.str(), Catch::StartsWith("mdcast-test "));
#endif
    CHECK(f.err.str().empty());
}

TEST_CASE("an unknown option is an error with a hint", "[cli]") {
    Fixture f;
    CHECK(f.parse({"--port", "1", "--bogus"}) == Outcome::kExitFailure);
    CHECK(f.err.str() == std::string("mdcast-test: error: unknown option '--bogus'") + kTryHelp);
    CHECK(f.out.str().empty());

    Fixture g;
    CHECK(g.parse({"-vx"}) == Outcome::kExitFailure);
    CHECK(g.err.str() == std::string("mdcast-test: error: unknown option '-x'") + kTryHelp);

    Fixture h;
    CHECK(h.parse({"--bogus=1"}) == Outcome::kExitFailure);
    CHECK_THAT(h.err.str(), Catch::Contains("unknown option '--bogus'"));
}

TEST_CASE("a value option at the end without a value is an error", "[cli]") {
    Fixture f;
    CHECK(f.parse({"--config"}) == Outcome::kExitFailure);
    CHECK(f.err.str() ==
          std::string("mdcast-test: error: option '--config' requires a value (FILE)") + kTryHelp);
}

TEST_CASE("flags and counters take no value", "[cli]") {
    Fixture f;
    CHECK(f.parse({"--dry-run=yes"}) == Outcome::kExitFailure);
    CHECK_THAT(f.err.str(), Catch::Contains("error: option '--dry-run' does not take a value"));
    Fixture g;
    CHECK(g.parse({"--verbose=2"}) == Outcome::kExitFailure);
}

TEST_CASE("bad numbers are errors", "[cli]") {
    for (const char* value : {"abc", "1.5", "", "12a", " 12", "0x10"}) {
        Fixture f;
        INFO("value '" << value << "'");
        CHECK(f.parse({"--port", value}) == Outcome::kExitFailure);
        CHECK(f.err.str() == std::string("mdcast-test: error: invalid value '") + value +
                                 "' for '--port': expected an integer" + kTryHelp);
        CHECK(f.port == 9000);
    }
    for (const char* value : {"x", "nan", "inf", "0.5s"}) {
        Fixture f;
        INFO("value '" << value << "'");
        CHECK(f.parse({"--ratio", value}) == Outcome::kExitFailure);
        CHECK_THAT(f.err.str(), Catch::Contains("for '--ratio': expected a number"));
    }
}

TEST_CASE("numbers out of range are errors that state the range", "[cli]") {
    Fixture f;
    CHECK(f.parse({"--port=70000"}) == Outcome::kExitFailure);
    CHECK(f.err.str() == std::string("mdcast-test: error: value '70000' for '--port' is out of "
                                     "range (allowed 1..65535)") +
                             kTryHelp);
    for (const char* value : {"0", "-1", "99999999999999999999", "-99999999999999999999"}) {
        Fixture g;
        INFO("value '" << value << "'");
        CHECK(g.parse({"--port", value}) == Outcome::kExitFailure);
        CHECK_THAT(g.err.str(), Catch::Contains("is out of range (allowed 1..65535)"));
    }
    Fixture h;
    CHECK(h.parse({"--ratio", "1.01"}) == Outcome::kExitFailure);
    CHECK_THAT(h.err.str(), Catch::Contains("value '1.01' for '--ratio' is out of range "
                                            "(allowed 0..1)"));
}

TEST_CASE("positional arguments are rejected", "[cli]") {
    Fixture f;
    CHECK(f.parse({"--port", "1", "extra"}) == Outcome::kExitFailure);
    CHECK(f.err.str() == std::string("mdcast-test: error: unexpected argument 'extra' "
                                     "(mdcast-test takes no positional arguments)") +
                             kTryHelp);
    Fixture g;
    CHECK(g.parse({"-"}) == Outcome::kExitFailure);
    CHECK_THAT(g.err.str(), Catch::Contains("unexpected argument '-'"));
    Fixture h;
    CHECK(h.parse({"--", "--port"}) == Outcome::kExitFailure);
    CHECK_THAT(h.err.str(), Catch::Contains("unexpected argument '--port'"));
    Fixture i;
    CHECK(i.parse({"-v", "--"}) == Outcome::kRun);
    CHECK(i.verbosity == 1);
}

TEST_CASE("declaring an option twice is a programming error", "[cli]") {
    bool a = false;
    int count = 0;
    CommandLine command_line("prog", "summary");
    command_line.flag("once", &a, "");
    CHECK_THROWS_AS(command_line.flag("once", &a, ""), std::logic_error);
    CHECK_THROWS_AS(command_line.flag("help", &a, ""), std::logic_error);
    CHECK_THROWS_AS(command_line.flag("--dashes", &a, ""), std::logic_error);
    CHECK_THROWS_AS(command_line.counter('h', "hush", &count, ""), std::logic_error);
}

TEST_CASE("long option names push their help to the next line", "[cli]") {
    std::string value;
    CommandLine command_line("prog", "summary");
    command_line.option("a-really-long-option-name-for-testing", &value, "SOME_VALUE",
                        "Help for it.");
    std::string help = command_line.usage();
    CHECK_THAT(help, Catch::Contains("      --a-really-long-option-name-for-testing SOME_VALUE\n"
                                     "                 Help for it.\n"));
}
