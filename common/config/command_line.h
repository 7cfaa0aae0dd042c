// Declarative command-line parsing shared by every mdcast binary. Each option is declared once
// with its target variable and help text; the parser writes into the targets and generates
// --help from the declarations, showing each target's value at declaration time as the default.
//
// Usage:
//   std::string config_path = "/etc/mdcast/server.yaml";
//   int verbosity = 0;
//   cli::CommandLine command_line("mdcast-server", "Serves market data to TCP clients.");
//   command_line.option("config", &config_path, "FILE", "Path to the YAML config.")
//               .counter('v', "verbose", &verbosity, "More log output; repeat for more.");
//   switch (command_line.parse(argc, argv, std::cout, std::cerr)) { ... }
//
// Accepted forms: --name, --name value, --name=value, -v, -vv, and "--" to end options. There
// are no positional arguments. --help/-h and --version are built in. Declaring an option twice
// (or reusing a built-in name) is a programming error and throws std::logic_error.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace mdcast::cli {

class CommandLine {
  public:
    // `summary` is one paragraph shown by --help under the usage line.
    CommandLine(std::string program, std::string summary);

    // --name sets *target to true.
    CommandLine& flag(std::string long_name, bool* target, std::string help);
    // --name VALUE; any string, including an empty one.
    CommandLine& option(std::string long_name, std::string* target, std::string metavar,
                        std::string help);
    // --name N; a decimal integer within [min, max].
    CommandLine& option(std::string long_name, int64_t* target, std::string metavar,
                        std::string help, int64_t min, int64_t max);
    // --name X; a finite real number within [min, max].
    CommandLine& option(std::string long_name, double* target, std::string metavar,
                        std::string help, double min, double max);
    // -v, -vv, --verbose: each occurrence adds one to *target.
    CommandLine& counter(char short_name, std::string long_name, int* target, std::string help);

    enum class Outcome { kRun, kExitSuccess, kExitFailure };

    // kRun: targets are filled in and the program should go on. kExitSuccess: --help or
    // --version was printed to `out`. kExitFailure: an error and a hint to try --help were
    // printed to `err`; targets may be partly updated.
    Outcome parse(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

    // The full --help text.
    std::string usage() const;

  private:
    enum class Kind { kFlag, kString, kInteger, kReal, kCounter, kHelp, kVersion };

    struct Option {
        Kind kind = Kind::kFlag;
        char short_name = 0;  // 0 when the option has no short form
        std::string long_name{};
        std::string metavar{};  // empty for options that take no value
        std::string help{};
        std::variant<std::monostate, bool*, std::string*, int64_t*, double*, int*> target{};
        int64_t integer_min = 0;
        int64_t integer_max = 0;
        double real_min = 0;
        double real_max = 0;
    };

    // Parsing state for one argv walk: the next argument to read and the first error.
    struct Cursor {
        int argc;
        const char* const* argv;
        int index;
        std::string error;
    };

    CommandLine& add(Option option);
    const Option* find_long(std::string_view name) const;
    const Option* find_short(char name) const;
    bool parse_argument(Cursor& cursor, const Option*& builtin);
    bool parse_long(std::string_view argument, Cursor& cursor, const Option*& action);
    bool parse_short(std::string_view argument, Cursor& cursor, const Option*& action);
    bool assign(const Option& option, std::string_view value, std::string& error);
    std::string option_label(const Option& option) const;
    std::string default_text(const Option& option) const;

    std::string program_;
    std::string summary_;
    std::vector<Option> options_;
};

}  // namespace mdcast::cli
