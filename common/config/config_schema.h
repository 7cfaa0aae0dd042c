// Declarative YAML configuration: each daemon declares every key exactly once, in one row
// (key, type, default, range, doc string, and whether a SIGHUP reloads it), and gets a loader
// that fills a plain struct, refuses unknown keys and reports every problem in the file at once
// with file:line:column. --help-config (describe()), the SIGHUP reload (apply_reload()) and the
// example-file check (check_example()) all read the rows, so a new row is all a new key needs.
//
// Usage:
//   struct ServerConfig { std::string listen_address; uint16_t listen_port; uint32_t max; };
//   const auto schema = config::Schema<ServerConfig>("mdcast-server")
//       .address("listen.address", &ServerConfig::listen_address, "0.0.0.0", "Address to bind.")
//       .integer("listen.port", &ServerConfig::listen_port, 9000, 1, 65535, "TCP port.")
//       .integer("listen.max", &ServerConfig::max, 100, 1, 1000, "Connections.").reloads();
//   ServerConfig config = schema.load_file(path);  // throws config::ConfigErrors
//
// A dotted key "listen.port" is written in YAML as a `listen:` mapping containing `port:`.
// Declaring an invalid or duplicate key is a programming error and throws std::logic_error.
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/config/config_member.h"
#include "common/config/config_values.h"

namespace mdcast::config {

// One problem found in a config file. `line` and `column` are 1-based; 0 means "no position"
// (e.g. the file could not be opened). `key` is the full dotted key, empty when not applicable.
struct ConfigError {
    std::string file;
    int line = 0;
    int column = 0;
    std::string key;
    std::string message;

    // "file:line:col: key 'listen.port': message"; the position and key parts are left out
    // when unknown.
    std::string to_string() const;
};

// One key whose value differs between two loaded configurations (SIGHUP reload).
struct ConfigChange {
    std::string key;
    std::string before;
    std::string after;
};

// A rule broken by a loaded configuration: the key it is about and why. Turned into a
// ConfigError positioned at that key's value in the file (or at no line when the key is not
// in the file and its default is what breaks the rule).
struct Problem {
    std::string key;
    std::string message;
};
using Problems = std::vector<Problem>;

// What a daemon's SIGHUP hook says about the changed keys whose rows reload: every one of
// them is applied except these.
struct ReloadResult {
    std::vector<std::string> failed;   // the files they name did not load: the running value stays
    std::vector<std::string> restart;  // this change of them needs a restart after all
};

// What a SIGHUP did with one changed key.
enum class ReloadVerdict { kApplied, kFailed, kRestart };
struct ReloadStep {
    ConfigChange change;
    ReloadVerdict verdict;
};

// The changed keys under `section` ("tls" for tls.cert_file, ...), e.g. every changed key of a
// component whose reload failed.
std::vector<std::string> changed_under(const std::vector<ConfigChange>& changes,
                                       const std::string& section);
// Appends the errors of `more` about a key `errors` has no error for yet (a rule or
// check that saw a bad key's default would only repeat it less clearly).
void add_unreported(std::vector<ConfigError>& errors, const std::vector<ConfigError>& more);

// Thrown by Schema::load_* with every error found, never with an empty list. what() holds one
// formatted error per line, ready to print.
class ConfigErrors : public std::runtime_error {
  public:
    explicit ConfigErrors(std::vector<ConfigError> errors);
    const std::vector<ConfigError>& errors() const { return errors_; }

  private:
    std::vector<ConfigError> errors_;
};

namespace detail {

// What the loader and describe() know about one key, independent of the target struct.
struct KeyInfo {
    std::string key;
    std::string type;          // "integer", "real", "boolean", "string", ...
    std::string default_text;  // default rendered for humans
    std::string constraint;    // "range 1..65535", "one of: a, b", or empty
    std::string doc;
    bool reloads = false;  // a SIGHUP applies it; else it needs a restart
};

// Applies the YAML value of the key with index `key_index` (order of declaration) to the
// object being loaded; returns false and fills `error` when the value is rejected.
using ApplyFn = std::function<bool(size_t key_index, const YAML::Node& value, ValueError& error)>;

// Non-template half of Schema<T>: key registry, YAML walking and error reporting.
class SchemaCore {
  public:
    explicit SchemaCore(std::string daemon_name);

    // Registers a key; throws std::logic_error for a malformed key (components must be
    // [a-z0-9_]+ joined by '.'), a duplicate, or a key that clashes with a section.
    void add(KeyInfo info);

    // Marks the key registered last as applied on SIGHUP; std::logic_error before any key.
    void mark_last_reloads();
    bool reloads(const std::string& key) const;
    const std::vector<KeyInfo>& keys() const { return keys_; }

    // Parses `yaml_text` and applies every known key through `apply`; throws ConfigErrors
    // listing every problem. Keys absent from the text are not touched.
    void load(const std::string& yaml_text, const std::string& file_name,
              const ApplyFn& apply) const;

    // Reads a whole file; throws ConfigErrors when it cannot be read.
    static std::string read_file(const std::string& path);

    // The problems as errors positioned at each key's value in `yaml_text` (no line when the
    // key is absent and its default applies).
    static std::vector<ConfigError> positioned(const Problems& problems,
                                               const std::string& yaml_text,
                                               const std::string& file_name);

    std::string describe() const;

  private:
    struct WalkState;
    void walk_mapping(const YAML::Node& mapping, const std::string& prefix, WalkState& state) const;
    void walk_pair(const YAML::Node& key, const YAML::Node& value, const std::string& full_key,
                   WalkState& state) const;
    std::optional<size_t> find_key(const std::string& key) const;
    bool is_section(const std::string& prefix) const;
    std::string section_children(const std::string& prefix) const;
    std::string suggest(const std::string& unknown_key) const;

    std::string daemon_name_;
    std::vector<KeyInfo> keys_;
};

// The example-file rules that need the text: every key present, and "[reloads]" on the
// line of exactly the keys that reload (common/config/example_file.cpp).
std::vector<ConfigError> example_key_errors(const std::vector<KeyInfo>& keys,
                                            const std::string& yaml_text,
                                            const std::string& file_name);

}  // namespace detail

template <class T>
class Schema {
  public:
    explicit Schema(std::string daemon_name) : core_(std::move(daemon_name)) {}

    // Integer of any integral member type, range inclusive.
    // M is deduced from the member alone, so plain literals work for a uint16_t member.
    template <class M>
    Schema& integer(std::string key, M T::*member, std::type_identity_t<M> default_value,
                    std::type_identity_t<M> min, std::type_identity_t<M> max, std::string doc) {
        return integer_at(std::move(key), member, default_value, min, max, std::move(doc));
    }

    // The same, bound into a component's settings struct held in T (config_member.h).
    template <class Outer, class Inner>
    Schema& integer(std::string key, Nested<Outer, Inner> member,
                    detail::field_t<Inner> default_value, detail::field_t<Inner> min,
                    detail::field_t<Inner> max, std::string doc) {
        return integer_at(std::move(key), member, default_value, min, max, std::move(doc));
    }

    Schema& real(std::string key, double T::*member, double default_value, double min, double max,
                 std::string doc) {
        std::string range = "range " + detail::real_text(min) + ".." + detail::real_text(max);
        return add({std::move(key), "real", detail::real_text(default_value), std::move(range),
                    std::move(doc)},
                   member, default_value,
                   [member, min, max](const YAML::Node& node, T& target, ValueError& error) {
                       return detail::convert_real(node, min, max, detail::field(target, member),
                                                   error);
                   });
    }

    Schema& boolean(std::string key, bool T::*member, bool default_value, std::string doc) {
        return add(
            {std::move(key), "boolean", default_value ? "true" : "false", "", std::move(doc)},
            member, default_value, [member](const YAML::Node& node, T& target, ValueError& error) {
                return detail::convert_boolean(node, detail::field(target, member), error);
            });
    }

    // `member`: a member pointer or a nested() chain (config_member.h).
    template <class Access>
    Schema& string(std::string key, Access member, std::string default_value, std::string doc) {
        static_assert(std::is_same_v<detail::field_t<Access>, std::string>);
        std::string shown = detail::quoted(default_value);
        return add({std::move(key), "string", std::move(shown), "", std::move(doc)}, member,
                   std::move(default_value),
                   [member](const YAML::Node& node, T& target, ValueError& error) {
                       return detail::convert_string(node, detail::field(target, member), error);
                   });
    }

    // String that must be an IPv4 or IPv6 address literal (as accepted by inet_pton).
    Schema& address(std::string key, std::string T::*member, std::string default_value,
                    std::string doc) {
        std::string shown = detail::quoted(default_value);
        return add(
            {std::move(key), "address", std::move(shown), "IPv4 or IPv6 literal", std::move(doc)},
            member, std::move(default_value),
            [member](const YAML::Node& node, T& target, ValueError& error) {
                return detail::convert_address(node, detail::field(target, member), error);
            });
    }

    // String restricted to `allowed` (compared exactly, case-sensitive). `member`: a
    // member pointer or a nested() chain.
    template <class Access>
    Schema& choice(std::string key, Access member, std::string default_value,
                   std::vector<std::string> allowed, std::string doc) {
        static_assert(std::is_same_v<detail::field_t<Access>, std::string>);
        std::string shown = detail::quoted(default_value);
        std::string constraint = "one of: " + detail::list_text(allowed);
        return add(
            {std::move(key), "choice", std::move(shown), std::move(constraint), std::move(doc)},
            member, std::move(default_value),
            [member, allowed = std::move(allowed)](const YAML::Node& node, T& target,
                                                   ValueError& error) {
                return detail::convert_choice(node, allowed, detail::field(target, member), error);
            });
    }

    Schema& string_list(std::string key, std::vector<std::string> T::*member,
                        std::vector<std::string> default_value, std::string doc) {
        std::string shown = "[" + detail::list_text(default_value) + "]";
        return add({std::move(key), "string list", std::move(shown), "", std::move(doc)}, member,
                   std::move(default_value),
                   [member](const YAML::Node& node, T& target, ValueError& error) {
                       return detail::convert_string_list(node, detail::field(target, member),
                                                          error);
                   });
    }

    // A mapping of names to string lists (`IDN: [TRDPRC_1, TRDVOL_1]`), empty by default:
    // for settings keyed by a name only the site knows, such as a service.
    Schema& string_list_map(std::string key, detail::StringListMap T::*member, std::string doc) {
        return add({std::move(key), "mapping of string lists", "{}", "", std::move(doc)}, member,
                   detail::StringListMap{},
                   [member](const YAML::Node& node, T& target, ValueError& error) {
                       return detail::convert_string_list_map(node, detail::field(target, member),
                                                              error);
                   });
    }

    // A default-constructed T with every declared default applied.
    T defaults() const {
        T result{};
        for (const auto& set_default : defaults_) set_default(result);
        return result;
    }

    // Throws ConfigErrors when the file cannot be read or has any error.
    T load_file(const std::string& path) const {
        return load_string(detail::SchemaCore::read_file(path), path);
    }

    // `file_name` is only used in error messages. After the keys, every rule given to
    // rule() is checked; broken rules are errors like any other, all reported at once.
    T load_string(const std::string& yaml_text, const std::string& file_name) const {
        std::vector<ConfigError> errors;
        T result = load_collecting(yaml_text, file_name, errors);
        if (!errors.empty()) throw ConfigErrors(std::move(errors));
        return result;
    }

    // As load_file(), but the file's errors (values and rules) go to `errors` and the
    // result holds every good value, a bad key keeping its default, so the checks that
    // need the rest of the file still run (--check-config reports all in one pass).
    // Throws ConfigErrors only when the file cannot be read.
    T load_file_collecting(const std::string& path, std::vector<ConfigError>& errors) const {
        return load_collecting(detail::SchemaCore::read_file(path), path, errors);
    }

    // A rule between keys that the ranges cannot say (a listener must be on, a size below
    // another): checked on every load, so --check-config, start-up and SIGHUP all refuse
    // a file that breaks it. The rule adds a Problem naming the key to fix.
    Schema& rule(std::function<void(const T&, Problems&)> check) {
        rules_.push_back(std::move(check));
        return *this;
    }

    // `problems` found outside the schema, as errors positioned in the file at `path`
    // ("(defaults)" when empty). Throws ConfigErrors when the file cannot be read.
    static std::vector<ConfigError> positioned(const Problems& problems, const std::string& path) {
        if (path.empty()) return detail::SchemaCore::positioned(problems, "", "(defaults)");
        return detail::SchemaCore::positioned(problems, detail::SchemaCore::read_file(path), path);
    }

    // The problems of `config` under every rule (the defaults pass them all).
    Problems broken_rules(const T& config) const {
        Problems problems;
        for (const auto& check : rules_) check(config, problems);
        return problems;
    }

    // Reference of every key: type, default, range and doc (printed by `--help-config`).
    std::string describe() const { return core_.describe(); }

    // Every key with its value as the reload log shows it, in declaration order
    // (/info shows the effective configuration with these).
    std::vector<std::pair<std::string, std::string>> values(const T& config) const {
        std::vector<std::pair<std::string, std::string>> result;
        for (const auto& key : keys_) result.emplace_back(key.name, key.render(config));
        return result;
    }

    // Every key with its value as JSON (a number, true/false, a string or a list of
    // strings), in declaration order: /info's effective configuration.
    std::vector<std::pair<std::string, std::string>> json_values(const T& config) const {
        std::vector<std::pair<std::string, std::string>> result;
        for (const auto& key : keys_) result.emplace_back(key.name, key.json(config));
        return result;
    }

    // Every key whose value differs, in declaration order.
    std::vector<ConfigChange> changes(const T& before, const T& after) const {
        std::vector<ConfigChange> result;
        for (const auto& key : keys_) {
            if (!key.same(before, after)) {
                result.push_back({key.name, key.render(before), key.render(after)});
            }
        }
        return result;
    }

    // Marks the key declared last as one a SIGHUP applies, part of its row:
    //   s.integer("clients.max_connections", ...).reloads();
    // Keys without it need a restart. The daemon's reload hook must make the key take
    // effect: read it from the running configuration when used, or re-read its files.
    Schema& reloads() {
        core_.mark_last_reloads();
        return *this;
    }

    // Whether a SIGHUP applies `key` (false for an unknown key).
    bool reloads(const std::string& key) const { return core_.reloads(key); }

    // The changes whose keys reload (what a daemon's reload hook acts on).
    std::vector<ConfigChange> reloading(const std::vector<ConfigChange>& changes) const {
        std::vector<ConfigChange> result;
        for (const auto& change : changes) {
            if (reloads(change.key)) result.push_back(change);
        }
        return result;
    }

    // The SIGHUP verdict on every change, in order: a key whose row reloads is applied
    // (copied from `fresh` into `running`) unless the daemon's `result` says it failed or
    // needs a restart; every other key needs a restart and keeps its running value.
    std::vector<ReloadStep> apply_reload(const std::vector<ConfigChange>& changes,
                                         const ReloadResult& result, const T& fresh,
                                         T& running) const {
        const auto listed = [](const std::vector<std::string>& keys, const std::string& key) {
            return std::find(keys.begin(), keys.end(), key) != keys.end();
        };
        std::vector<ReloadStep> steps;
        for (const auto& change : changes) {
            ReloadVerdict verdict = ReloadVerdict::kApplied;
            if (!reloads(change.key) || listed(result.restart, change.key)) {
                verdict = ReloadVerdict::kRestart;
            } else if (listed(result.failed, change.key)) {
                verdict = ReloadVerdict::kFailed;
            } else {
                copy_key(change.key, fresh, running);
            }
            steps.push_back({change, verdict});
        }
        return steps;
    }

    // Checks an example file (etc/*.yaml): it loads, shows every key with its default, and
    // marks the line of each key that reloads with "[reloads]" (and no other). Returns every
    // problem, positioned at its key; empty when the example matches the schema.
    // `packaged`: keys the file sets on purpose, with the value it must show instead.
    std::vector<ConfigError> check_example(
        const std::string& yaml_text, const std::string& file_name,
        const std::vector<std::pair<std::string, std::string>>& packaged = {}) const {
        Problems problems;
        try {
            const T shown = load_string(yaml_text, file_name);
            for (const auto& change : changes(defaults(), shown)) {
                const auto set =
                    std::find_if(packaged.begin(), packaged.end(),
                                 [&](const auto& key) { return key.first == change.key; });
                const bool is_packaged = set != packaged.end();
                if (is_packaged && set->second == change.after) continue;
                problems.push_back(
                    {change.key, "shows " + change.after +
                                     (is_packaged ? ", not the packaged " + set->second
                                                  : ", not the default " + change.before)});
            }
        } catch (const ConfigErrors& errors) {
            return errors.errors();
        }
        auto errors = detail::SchemaCore::positioned(problems, yaml_text, file_name);
        for (auto& error : detail::example_key_errors(core_.keys(), yaml_text, file_name))
            errors.push_back(std::move(error));
        return errors;
    }

    // Copies one key's value (a reload applies the keys it can, one by one).
    // Returns false for an unknown key.
    bool copy_key(const std::string& key, const T& from, T& to) const {
        for (const auto& known : keys_) {
            if (known.name == key) {
                known.copy(from, to);
                return true;
            }
        }
        return false;
    }

  private:
    using ValueError = detail::ValueError;

    T load_collecting(const std::string& yaml_text, const std::string& file_name,
                      std::vector<ConfigError>& errors) const {
        T result = defaults();
        try {
            core_.load(yaml_text, file_name,
                       [this, &result](size_t index, const YAML::Node& value, ValueError& error) {
                           return appliers_[index](value, result, error);
                       });
        } catch (const ConfigErrors& thrown) {
            errors = thrown.errors();
        }
        add_unreported(errors,
                       detail::SchemaCore::positioned(broken_rules(result), yaml_text, file_name));
        return result;
    }
    using Applier = std::function<bool(const YAML::Node&, T&, ValueError&)>;

    template <class Access>
    Schema& integer_at(std::string key, Access member, detail::field_t<Access> default_value,
                       detail::field_t<Access> min, detail::field_t<Access> max, std::string doc) {
        using M = detail::field_t<Access>;
        static_assert(std::is_integral_v<M> && !std::is_same_v<M, bool>,
                      "integer() needs an integral member; use boolean() for bool");
        std::string range = "range " + std::to_string(min) + ".." + std::to_string(max);
        return add({std::move(key), "integer", std::to_string(default_value), std::move(range),
                    std::move(doc)},
                   member, default_value,
                   [member, min, max](const YAML::Node& node, T& target, ValueError& error) {
                       return detail::convert_integer(node, min, max, detail::field(target, member),
                                                      error);
                   });
    }

    // `member`: a member pointer or a nested() chain (config_member.h).
    template <class Access>
    Schema& add(detail::KeyInfo info, Access member, detail::field_t<Access> default_value,
                Applier applier) {
        using detail::field;
        std::string name = info.key;
        core_.add(std::move(info));
        defaults_.push_back([member, value = std::move(default_value)](T& target) {
            field(target, member) = value;
        });
        appliers_.push_back(std::move(applier));
        keys_.push_back(
            {std::move(name),
             [member](const T& a, const T& b) { return field(a, member) == field(b, member); },
             [member](const T& value) { return detail::value_text(field(value, member)); },
             [member](const T& value) { return detail::value_json(field(value, member)); },
             [member](const T& from, T& to) { field(to, member) = field(from, member); }});
        return *this;
    }

    struct KeyAccess {
        std::string name;
        std::function<bool(const T&, const T&)> same;
        std::function<std::string(const T&)> render;
        std::function<std::string(const T&)> json;
        std::function<void(const T&, T&)> copy;
    };
    std::vector<KeyAccess> keys_;

    detail::SchemaCore core_;
    std::vector<std::function<void(T&)>> defaults_;
    std::vector<Applier> appliers_;  // same order as the keys registered in core_
    std::vector<std::function<void(const T&, Problems&)>> rules_;
};

}  // namespace mdcast::config
