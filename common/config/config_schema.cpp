#include "common/config/config_schema.h"

#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>

namespace mdcast::config {

namespace {

constexpr size_t kDescribeWidth = 100;
constexpr size_t kDocIndent = 4;

std::string join_errors(const std::vector<ConfigError>& errors) {
    std::string text;
    for (const auto& error : errors) {
        if (!text.empty()) text += '\n';
        text += error.to_string();
    }
    return text;
}

ConfigError make_error(const std::string& file, const YAML::Mark& mark, std::string key,
                       std::string message) {
    ConfigError error{file, 0, 0, std::move(key), std::move(message)};
    if (!mark.is_null()) {
        error.line = mark.line + 1;
        error.column = mark.column + 1;
    }
    return error;
}

// Where the value of dotted `key` is in a loaded document; null when it is not there.
YAML::Mark value_mark(const YAML::Node& mapping, std::string_view key) {
    if (!mapping.IsMap()) return YAML::Mark::null_mark();
    const size_t dot = key.find('.');
    const YAML::Node child = mapping[std::string(key.substr(0, dot))];
    if (!child || child.IsNull()) return YAML::Mark::null_mark();
    return dot == std::string_view::npos ? child.Mark() : value_mark(child, key.substr(dot + 1));
}

std::string with_article(const std::string& noun) {
    bool vowel = !noun.empty() && std::string_view("aeiou").find(noun[0]) != std::string::npos;
    return (vowel ? "an " : "a ") + noun;
}

bool is_valid_key(const std::string& key) {
    if (key.empty() || key.front() == '.' || key.back() == '.') return false;
    if (key.find("..") != std::string::npos) return false;
    return std::all_of(key.begin(), key.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
    });
}

bool starts_with_section(const std::string& key, const std::string& section) {
    return key.size() > section.size() && key.compare(0, section.size(), section) == 0 &&
           key[section.size()] == '.';
}

// Optimal string alignment distance: Levenshtein plus adjacent transpositions, so that the
// common typo "prot" for "port" costs 1.
size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
            }
        }
    }
    return d[a.size()][b.size()];
}

// How many edits still count as a typo rather than a different word.
size_t typo_budget(const std::string& word) {
    return std::clamp<size_t>(word.size() / 4, 1, 3);
}

std::string leaf_of(const std::string& key) {
    size_t dot = key.rfind('.');
    return dot == std::string::npos ? key : key.substr(dot + 1);
}

// Greedy word wrap; every output line starts with `indent` spaces.
std::string wrap_text(const std::string& text, size_t indent, size_t width) {
    std::istringstream words(text);
    std::string word;
    std::string out;
    size_t column = 0;
    while (words >> word) {
        if (column > indent && column + 1 + word.size() > width) {
            out += '\n';
            column = 0;
        }
        if (column == 0) {
            out.append(indent, ' ');
            column = indent;
        } else {
            out += ' ';
            ++column;
        }
        out += word;
        column += word.size();
    }
    return out;
}

}  // namespace

std::string ConfigError::to_string() const {
    std::string text = file;
    if (line > 0) text += ":" + std::to_string(line) + ":" + std::to_string(column);
    text += ": ";
    if (!key.empty()) text += "key '" + key + "': ";
    return text + message;
}

ConfigErrors::ConfigErrors(std::vector<ConfigError> errors)
    : std::runtime_error(join_errors(errors)), errors_(std::move(errors)) {}

std::vector<std::string> changed_under(const std::vector<ConfigChange>& changes,
                                       const std::string& section) {
    std::vector<std::string> keys;
    for (const auto& change : changes) {
        if (starts_with_section(change.key, section)) keys.push_back(change.key);
    }
    return keys;
}

void add_unreported(std::vector<ConfigError>& errors, const std::vector<ConfigError>& more) {
    const size_t known = errors.size();
    for (const auto& error : more) {
        const bool repeated = !error.key.empty() &&
                              std::any_of(errors.begin(), errors.begin() + known,
                                          [&](const ConfigError& e) { return e.key == error.key; });
        if (!repeated) errors.push_back(error);
    }
}

namespace detail {

// Mutable context of one load() call.
struct SchemaCore::WalkState {
    const std::string& file;
    const ApplyFn& apply;
    std::vector<ConfigError> errors;

    void report(const YAML::Mark& mark, std::string key, std::string message) {
        errors.push_back(make_error(file, mark, std::move(key), std::move(message)));
    }
};

SchemaCore::SchemaCore(std::string daemon_name) : daemon_name_(std::move(daemon_name)) {}

void SchemaCore::add(KeyInfo info) {
    if (!is_valid_key(info.key)) {
        throw std::logic_error("config schema: malformed key '" + info.key + "'");
    }
    for (const auto& existing : keys_) {
        if (existing.key == info.key || starts_with_section(existing.key, info.key) ||
            starts_with_section(info.key, existing.key)) {
            throw std::logic_error("config schema: key '" + info.key + "' clashes with '" +
                                   existing.key + "'");
        }
    }
    keys_.push_back(std::move(info));
}

void SchemaCore::mark_last_reloads() {
    if (keys_.empty()) throw std::logic_error("config schema: reloads() before any key");
    keys_.back().reloads = true;
}

bool SchemaCore::reloads(const std::string& key) const {
    const std::optional<size_t> index = find_key(key);
    return index && keys_[*index].reloads;
}

namespace {

// Where each YAML document of a text starts; nothing else of the events.
class DocumentStarts final : public YAML::EventHandler {
  public:
    std::vector<YAML::Mark> marks;
    void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                    YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
};

// Where a second document starts, if the text has one. Reads at most two:
// yaml-cpp 0.7's LoadAll never returns on a stray ',' outside [] or {} (its
// parser hands out empty documents without consuming it) and allocates until
// the process dies, so a one-character config file took a daemon down.
std::optional<YAML::Mark> second_document(const std::string& yaml_text) {
    std::istringstream input(yaml_text);
    YAML::Parser parser(input);
    DocumentStarts starts;
    for (int i = 0; i < 2 && parser.HandleNextDocument(starts); ++i) {
    }
    if (starts.marks.size() < 2) return std::nullopt;
    return starts.marks[1];
}

}  // namespace

void SchemaCore::load(const std::string& yaml_text, const std::string& file_name,
                      const ApplyFn& apply) const {
    WalkState state{file_name, apply, {}};
    YAML::Node root;
    try {
        if (const auto second = second_document(yaml_text)) {
            state.report(*second, "",
                         "only one YAML document is allowed per file (a second one starts here; "
                         "a stray ',' outside [] or {} does that too)");
        }
        root = YAML::Load(yaml_text);
    } catch (const YAML::Exception& e) {
        state.report(e.mark, "", "YAML syntax error: " + e.msg);
        throw ConfigErrors(std::move(state.errors));
    }
    if (!root.IsNull()) {
        if (root.IsMap()) {
            walk_mapping(root, "", state);
        } else {
            state.report(root.Mark(), "",
                         "the top level must be a mapping of keys, got " + detail::node_kind(root));
        }
    }
    if (!state.errors.empty()) throw ConfigErrors(std::move(state.errors));
}

// Visits every key of one mapping; `prefix` is the dotted path of the mapping itself.
void SchemaCore::walk_mapping(const YAML::Node& mapping, const std::string& prefix,
                              WalkState& state) const {
    std::map<std::string, YAML::Mark> seen;
    for (const auto& pair : mapping) {
        const YAML::Node& key = pair.first;
        if (!key.IsScalar()) {
            state.report(key.Mark(), prefix,
                         "keys must be plain names, got " + detail::node_kind(key));
            continue;
        }
        std::string full_key = prefix.empty() ? key.Scalar() : prefix + "." + key.Scalar();
        if (key.Scalar().find('.') != std::string::npos) {
            // One spelling per key keeps duplicate detection and the docs simple.
            state.report(key.Mark(), full_key,
                         "dotted keys must be written as nested mappings ('a.b: 1' is 'a:' then "
                         "an indented 'b: 1')");
            continue;
        }
        auto [first, inserted] = seen.emplace(key.Scalar(), key.Mark());
        if (!inserted) {
            state.report(
                key.Mark(), full_key,
                "duplicate key (first set on line " + std::to_string(first->second.line + 1) + ")");
            continue;
        }
        walk_pair(key, pair.second, full_key, state);
    }
}

void SchemaCore::walk_pair(const YAML::Node& key, const YAML::Node& value,
                           const std::string& full_key, WalkState& state) const {
    std::optional<size_t> index = find_key(full_key);
    if (index) {
        // A null value's own mark points past it, at the next token: report at the key.
        if (value.IsNull()) {
            state.report(key.Mark(), full_key,
                         "missing value (expected " + with_article(keys_[*index].type) + ")");
            return;
        }
        ValueError error;
        if (!state.apply(*index, value, error)) {
            state.report(error.mark.is_null() ? value.Mark() : error.mark, full_key, error.message);
        }
        return;
    }
    if (is_section(full_key)) {
        if (value.IsMap()) {
            walk_mapping(value, full_key, state);
        } else if (!value.IsNull()) {
            state.report(value.Mark(), full_key,
                         "expected a mapping (section with keys " + section_children(full_key) +
                             "), got " + detail::node_kind(value));
        }
        return;
    }
    state.report(key.Mark(), full_key, "unknown key" + suggest(full_key));
}

std::optional<size_t> SchemaCore::find_key(const std::string& key) const {
    for (size_t i = 0; i < keys_.size(); ++i) {
        if (keys_[i].key == key) return i;
    }
    return std::nullopt;
}

bool SchemaCore::is_section(const std::string& prefix) const {
    return std::any_of(keys_.begin(), keys_.end(),
                       [&](const KeyInfo& info) { return starts_with_section(info.key, prefix); });
}

// Immediate children of a section, e.g. "address, port" for "listen".
std::string SchemaCore::section_children(const std::string& prefix) const {
    std::vector<std::string> children;
    for (const auto& info : keys_) {
        if (!starts_with_section(info.key, prefix)) continue;
        std::string rest = info.key.substr(prefix.size() + 1);
        std::string child = rest.substr(0, rest.find('.'));
        if (std::find(children.begin(), children.end(), child) == children.end()) {
            children.push_back(child);
        }
    }
    return list_text(children);
}

// "; did you mean 'x'?" when a known key or section is within typo distance of the unknown
// key, either as a whole or by its last component (a key put in the wrong section).
std::string SchemaCore::suggest(const std::string& unknown_key) const {
    std::vector<std::string> candidates;
    for (const auto& info : keys_) {
        candidates.push_back(info.key);
        for (size_t dot = info.key.find('.'); dot != std::string::npos;
             dot = info.key.find('.', dot + 1)) {
            candidates.push_back(info.key.substr(0, dot));
        }
    }
    std::string best;
    size_t best_distance = typo_budget(unknown_key) + 1;
    for (const auto& candidate : candidates) {
        size_t distance = edit_distance(unknown_key, candidate);
        if (distance < best_distance) {
            best = candidate;
            best_distance = distance;
        }
    }
    if (best.empty()) {
        std::string leaf = leaf_of(unknown_key);
        best_distance = typo_budget(leaf) + 1;
        for (const auto& info : keys_) {
            size_t distance = edit_distance(leaf, leaf_of(info.key));
            if (distance < best_distance) {
                best = info.key;
                best_distance = distance;
            }
        }
    }
    return best.empty() ? "" : "; did you mean '" + best + "'?";
}

std::vector<ConfigError> SchemaCore::positioned(const Problems& problems,
                                                const std::string& yaml_text,
                                                const std::string& file_name) {
    YAML::Node root;
    try {
        root = YAML::Load(yaml_text);
    } catch (const YAML::Exception&) {
        // Only reached for text that loaded before; the errors then carry no line.
    }
    std::vector<ConfigError> errors;
    for (const auto& problem : problems) {
        const YAML::Mark mark = value_mark(root, problem.key);
        errors.push_back(
            make_error(file_name, mark, problem.key,
                       mark.is_null() ? problem.message + " (the default)" : problem.message));
    }
    return errors;
}

std::string SchemaCore::read_file(const std::string& path) {
    auto fail = [&path](const std::string& message) {
        return ConfigErrors({ConfigError{path, 0, 0, "", message}});
    };
    std::error_code ignored;
    if (std::filesystem::is_directory(path, ignored)) {
        throw fail("cannot read config file: it is a directory");
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) throw fail("cannot open config file: " + std::string(std::strerror(errno)));
    std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (in.bad()) throw fail("cannot read config file: " + std::string(std::strerror(errno)));
    return text;
}

std::string SchemaCore::describe() const {
    std::string text = "Configuration keys for " + daemon_name_ + ".\n";
    text += wrap_text(
        "The file is YAML. A dotted key such as 'listen.port' is written as nested mappings "
        "('listen:' then an indented 'port:'). Keys that are left out keep their default; "
        "unknown keys are rejected. A key that says 'reloads on SIGHUP' takes effect on "
        "SIGHUP (systemctl reload); the others need a restart.",
        0, kDescribeWidth);
    text += "\n";
    for (const auto& info : keys_) {
        text += "\n" + info.key + " (" + info.type;
        if (!info.constraint.empty()) text += ", " + info.constraint;
        text += "; default " + info.default_text;
        text += info.reloads ? "; reloads on SIGHUP)\n" : "; needs a restart)\n";
        if (!info.doc.empty()) text += wrap_text(info.doc, kDocIndent, kDescribeWidth) + "\n";
    }
    return text;
}

}  // namespace detail

}  // namespace mdcast::config
