// The example-file rules of Schema::check_example that read the text itself: an
// example (etc/*.yaml) shows every key, and the reload flag of each key's row is
// visible on its line, so an operator editing the file sees what a SIGHUP applies.
#include <sstream>
#include <string_view>

#include "common/config/config_schema.h"

namespace mdcast::config::detail {

namespace {

constexpr std::string_view kReloadMark = "[reloads]";

// Where the key node of dotted `key` is in a loaded document; null when it is not there.
YAML::Mark key_mark(const YAML::Node& mapping, std::string_view key) {
    if (!mapping.IsMap()) return YAML::Mark::null_mark();
    const size_t dot = key.find('.');
    const std::string_view first = key.substr(0, dot);
    for (const auto& pair : mapping) {
        if (!pair.first.IsScalar() || pair.first.Scalar() != first) continue;
        if (dot == std::string_view::npos) return pair.first.Mark();
        return key_mark(pair.second, key.substr(dot + 1));
    }
    return YAML::Mark::null_mark();
}

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(std::move(line));
    return lines;
}

ConfigError error_at(const std::string& file, const YAML::Mark& mark, const std::string& key,
                     std::string message) {
    return {file, mark.line + 1, mark.column + 1, key, std::move(message)};
}

}  // namespace

std::vector<ConfigError> example_key_errors(const std::vector<KeyInfo>& keys,
                                            const std::string& yaml_text,
                                            const std::string& file_name) {
    const YAML::Node root = YAML::Load(yaml_text);  // the caller loaded it without error
    const std::vector<std::string> lines = split_lines(yaml_text);
    std::vector<ConfigError> errors;
    for (const auto& info : keys) {
        const YAML::Mark mark = key_mark(root, info.key);
        if (mark.is_null() || mark.line < 0 || static_cast<size_t>(mark.line) >= lines.size()) {
            errors.push_back({file_name, 0, 0, info.key,
                              "missing: the example shows every key with its default"});
            continue;
        }
        const bool marked = lines[mark.line].find(kReloadMark) != std::string::npos;
        if (info.reloads && !marked) {
            errors.push_back(error_at(file_name, mark, info.key,
                                      "reloads on SIGHUP: its line's comment must say [reloads]"));
        } else if (!info.reloads && marked) {
            errors.push_back(error_at(file_name, mark, info.key,
                                      "needs a restart, but its line says [reloads]"));
        }
    }
    return errors;
}

}  // namespace mdcast::config::detail
