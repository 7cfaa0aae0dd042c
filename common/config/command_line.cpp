#include "common/config/command_line.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <locale>
#include <sstream>
#include <stdexcept>

#ifndef MDCAST_VERSION
#define MDCAST_VERSION "unknown"
#endif

namespace mdcast::cli {

namespace {

constexpr size_t kHelpWidth = 80;
constexpr size_t kMaxLabelWidth = 30;  // longer labels put their help on the next line
constexpr size_t kLabelIndent = 2;

std::string number_text(int64_t value) {
    return std::to_string(value);
}

std::string number_text(double value) {
    std::ostringstream text;
    text.imbue(std::locale::classic());
    text << value;
    return text.str();
}

std::string quote_option(std::string_view name) {
    return "'--" + std::string(name) + "'";
}

std::string out_of_range(std::string_view name, std::string_view value, const std::string& min,
                         const std::string& max) {
    return "value '" + std::string(value) + "' for " + quote_option(name) +
           " is out of range (allowed " + min + ".." + max + ")";
}

// Decimal integer with an optional sign; anything else (spaces, "1.5", "0x10") is rejected.
bool parse_integer(std::string_view name, std::string_view value, int64_t min, int64_t max,
                   int64_t& out, std::string& error) {
    std::string_view digits = value;
    if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
    int64_t parsed = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), parsed);
    bool consumed = !digits.empty() && end == digits.data() + digits.size();
    if (!consumed || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
        error = "invalid value '" + std::string(value) + "' for " + quote_option(name) +
                ": expected an integer";
        return false;
    }
    if (ec == std::errc::result_out_of_range || parsed < min || parsed > max) {
        error = out_of_range(name, value, number_text(min), number_text(max));
        return false;
    }
    out = parsed;
    return true;
}

bool parse_real(std::string_view name, std::string_view value, double min, double max, double& out,
                std::string& error) {
    std::string_view digits = value;
    if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
    double parsed = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), parsed);
    bool consumed = !digits.empty() && end == digits.data() + digits.size();
    if (!consumed || ec != std::errc() || !std::isfinite(parsed)) {
        error = "invalid value '" + std::string(value) + "' for " + quote_option(name) +
                ": expected a number";
        return false;
    }
    if (parsed < min || parsed > max) {
        error = out_of_range(name, value, number_text(min), number_text(max));
        return false;
    }
    out = parsed;
    return true;
}

// Greedy word wrap of `text` into lines of at most `width` columns; lines after the first are
// indented by `indent` (the first line is placed by the caller).
std::string wrap_text(const std::string& text, size_t first_column, size_t indent, size_t width) {
    std::istringstream words(text);
    std::string word;
    std::string out;
    size_t column = first_column;
    bool line_empty = true;
    while (words >> word) {
        if (!line_empty && column + 1 + word.size() > width) {
            out += '\n' + std::string(indent, ' ');
            column = indent;
            line_empty = true;
        }
        if (!line_empty) {
            out += ' ';
            ++column;
        }
        out += word;
        column += word.size();
        line_empty = false;
    }
    return out;
}

bool is_valid_long_name(const std::string& name) {
    return !name.empty() && name.front() != '-' && name.find('=') == std::string::npos &&
           name.find(' ') == std::string::npos;
}

}  // namespace

CommandLine::CommandLine(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {
    add({.kind = Kind::kHelp,
         .short_name = 'h',
         .long_name = "help",
         .help = "Show this help and exit."});
    add({.kind = Kind::kVersion, .long_name = "version", .help = "Print the version and exit."});
}

CommandLine& CommandLine::flag(std::string long_name, bool* target, std::string help) {
    return add({.kind = Kind::kFlag,
                .long_name = std::move(long_name),
                .help = std::move(help),
                .target = target});
}

CommandLine& CommandLine::option(std::string long_name, std::string* target, std::string metavar,
                                 std::string help) {
    return add({.kind = Kind::kString,
                .long_name = std::move(long_name),
                .metavar = std::move(metavar),
                .help = std::move(help),
                .target = target});
}

CommandLine& CommandLine::option(std::string long_name, int64_t* target, std::string metavar,
                                 std::string help, int64_t min, int64_t max) {
    return add({.kind = Kind::kInteger,
                .long_name = std::move(long_name),
                .metavar = std::move(metavar),
                .help = std::move(help),
                .target = target,
                .integer_min = min,
                .integer_max = max});
}

CommandLine& CommandLine::option(std::string long_name, double* target, std::string metavar,
                                 std::string help, double min, double max) {
    return add({.kind = Kind::kReal,
                .long_name = std::move(long_name),
                .metavar = std::move(metavar),
                .help = std::move(help),
                .target = target,
                .real_min = min,
                .real_max = max});
}

CommandLine& CommandLine::counter(char short_name, std::string long_name, int* target,
                                  std::string help) {
    return add({.kind = Kind::kCounter,
                .short_name = short_name,
                .long_name = std::move(long_name),
                .help = std::move(help),
                .target = target});
}

CommandLine& CommandLine::add(Option option) {
    bool value_option =
        option.kind == Kind::kString || option.kind == Kind::kInteger || option.kind == Kind::kReal;
    if (!is_valid_long_name(option.long_name) || find_long(option.long_name) != nullptr) {
        throw std::logic_error("command line: bad or duplicate option '--" + option.long_name +
                               "'");
    }
    if (option.short_name != 0 && (!std::isalnum(static_cast<unsigned char>(option.short_name)) ||
                                   find_short(option.short_name) != nullptr)) {
        throw std::logic_error("command line: bad or duplicate option '-" +
                               std::string(1, option.short_name) + "'");
    }
    if (value_option && option.metavar.empty()) option.metavar = "VALUE";
    options_.push_back(std::move(option));
    return *this;
}

const CommandLine::Option* CommandLine::find_long(std::string_view name) const {
    auto it = std::find_if(options_.begin(), options_.end(),
                           [name](const Option& option) { return option.long_name == name; });
    return it == options_.end() ? nullptr : &*it;
}

const CommandLine::Option* CommandLine::find_short(char name) const {
    auto it = std::find_if(options_.begin(), options_.end(),
                           [name](const Option& option) { return option.short_name == name; });
    return it == options_.end() ? nullptr : &*it;
}

CommandLine::Outcome CommandLine::parse(int argc, const char* const* argv, std::ostream& out,
                                        std::ostream& err) {
    Cursor cursor{argc, argv, 1, ""};
    const Option* builtin = nullptr;
    while (builtin == nullptr && cursor.index < argc) {
        if (!parse_argument(cursor, builtin)) {
            err << program_ << ": error: " << cursor.error << "\nTry '" << program_
                << " --help'.\n";
            return Outcome::kExitFailure;
        }
    }
    if (builtin == nullptr) return Outcome::kRun;
    if (builtin->kind == Kind::kHelp) {
        out << usage();
    } else {
        out << program_ << " " << MDCAST_VERSION << "\n";
    }
    return Outcome::kExitSuccess;
}

// Consumes argv[cursor.index] and, for "--name value", the value after it.
bool CommandLine::parse_argument(Cursor& cursor, const Option*& builtin) {
    std::string_view argument = cursor.argv[cursor.index++];
    if (argument == "--") {
        // Ends the options; anything after it would be positional, and there are none.
        if (cursor.index == cursor.argc) return true;
        argument = cursor.argv[cursor.index++];
    } else if (argument.starts_with("--")) {
        return parse_long(argument.substr(2), cursor, builtin);
    } else if (argument.size() > 1 && argument.front() == '-') {
        return parse_short(argument.substr(1), cursor, builtin);
    }
    cursor.error = "unexpected argument '" + std::string(argument) + "' (" + program_ +
                   " takes no positional arguments)";
    return false;
}

// `body` is the argument without its leading "--". Sets `builtin` when --help or --version is
// met, so that parsing stops there.
bool CommandLine::parse_long(std::string_view body, Cursor& cursor, const Option*& builtin) {
    size_t equals = body.find('=');
    std::string_view name = body.substr(0, equals);
    const Option* option = find_long(name);
    if (option == nullptr) {
        cursor.error = "unknown option " + quote_option(name);
        return false;
    }
    if (option->metavar.empty()) {
        if (equals != std::string_view::npos) {
            cursor.error = "option " + quote_option(name) + " does not take a value";
            return false;
        }
        if (option->kind == Kind::kHelp || option->kind == Kind::kVersion) builtin = option;
        return assign(*option, "", cursor.error);
    }
    if (equals != std::string_view::npos) {
        return assign(*option, body.substr(equals + 1), cursor.error);
    }
    if (cursor.index >= cursor.argc) {
        cursor.error =
            "option " + quote_option(name) + " requires a value (" + option->metavar + ")";
        return false;
    }
    return assign(*option, cursor.argv[cursor.index++], cursor.error);
}

// `cluster` is the argument without its leading "-": one or more short options, none of which
// takes a value (e.g. "vv").
bool CommandLine::parse_short(std::string_view cluster, Cursor& cursor, const Option*& builtin) {
    for (char name : cluster) {
        const Option* option = find_short(name);
        if (option == nullptr) {
            cursor.error = "unknown option '-" + std::string(1, name) + "'";
            return false;
        }
        if (option->kind == Kind::kHelp || option->kind == Kind::kVersion) {
            builtin = option;
            return true;
        }
        if (!assign(*option, "", cursor.error)) return false;
    }
    return true;
}

bool CommandLine::assign(const Option& option, std::string_view value, std::string& error) {
    switch (option.kind) {
        case Kind::kFlag:
            *std::get<bool*>(option.target) = true;
            return true;
        case Kind::kCounter:
            ++*std::get<int*>(option.target);
            return true;
        case Kind::kString:
            *std::get<std::string*>(option.target) = std::string(value);
            return true;
        case Kind::kInteger:
            return parse_integer(option.long_name, value, option.integer_min, option.integer_max,
                                 *std::get<int64_t*>(option.target), error);
        case Kind::kReal:
            return parse_real(option.long_name, value, option.real_min, option.real_max,
                              *std::get<double*>(option.target), error);
        case Kind::kHelp:
        case Kind::kVersion:
            return true;
    }
    return true;
}

std::string CommandLine::usage() const {
    std::vector<const Option*> ordered;  // declared options first, built-ins last
    for (const auto& option : options_) {
        if (option.kind != Kind::kHelp && option.kind != Kind::kVersion) ordered.push_back(&option);
    }
    for (const auto& option : options_) {
        if (option.kind == Kind::kHelp || option.kind == Kind::kVersion) ordered.push_back(&option);
    }
    size_t label_width = 0;
    for (const Option* option : ordered) {
        size_t width = option_label(*option).size();
        if (width <= kMaxLabelWidth) label_width = std::max(label_width, width);
    }
    size_t help_column = kLabelIndent + label_width + 2;
    std::string text = "Usage: " + program_ + " [OPTIONS]\n\n";
    if (!summary_.empty()) text += wrap_text(summary_, 0, 0, kHelpWidth) + "\n\n";
    text += "Options:\n";
    for (const Option* option : ordered) {
        std::string line = std::string(kLabelIndent, ' ') + option_label(*option);
        if (line.size() + 2 > help_column)
            line += "\n" + std::string(help_column, ' ');
        else
            line.append(help_column - line.size(), ' ');
        std::string help = option->help;
        std::string suffix = default_text(*option);
        if (!suffix.empty()) help += (help.empty() ? "" : " ") + suffix;
        text += line + wrap_text(help, help_column, help_column, kHelpWidth) + "\n";
    }
    return text;
}

// "-v, --verbose" or "    --config FILE"; long names line up whether or not a short form
// exists.
std::string CommandLine::option_label(const Option& option) const {
    std::string label =
        option.short_name != 0 ? std::string("-") + option.short_name + ", " : std::string(4, ' ');
    label += "--" + option.long_name;
    if (!option.metavar.empty()) label += " " + option.metavar;
    return label;
}

// "(range: 1..65535) (default: 9000)"; empty parts are left out so that help stays short.
std::string CommandLine::default_text(const Option& option) const {
    std::string range;
    std::string value;
    if (auto* flag_target = std::get_if<bool*>(&option.target)) {
        if (**flag_target) value = "on";
    } else if (auto* string_target = std::get_if<std::string*>(&option.target)) {
        value = **string_target;
    } else if (auto* integer_target = std::get_if<int64_t*>(&option.target)) {
        if (**integer_target != 0) value = number_text(**integer_target);
        if (option.integer_min != std::numeric_limits<int64_t>::min() ||
            option.integer_max != std::numeric_limits<int64_t>::max()) {
            range = number_text(option.integer_min) + ".." + number_text(option.integer_max);
        }
    } else if (auto* real_target = std::get_if<double*>(&option.target)) {
        if (**real_target != 0) value = number_text(**real_target);
        if (option.real_min > std::numeric_limits<double>::lowest() ||
            option.real_max < std::numeric_limits<double>::max()) {
            range = number_text(option.real_min) + ".." + number_text(option.real_max);
        }
    } else if (auto* counter_target = std::get_if<int*>(&option.target)) {
        if (**counter_target != 0) value = std::to_string(**counter_target);
    }
    std::string text = range.empty() ? "" : "(range: " + range + ")";
    if (!value.empty()) text += (text.empty() ? "" : " ") + ("(default: " + value + ")");
    return text;
}

}  // namespace mdcast::cli
