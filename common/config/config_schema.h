// Declarative YAML configuration: each daemon declares every key exactly once (key, type,
// default, range, doc string) and gets a loader that fills a plain struct, refuses unknown keys
// and reports every problem in the file at once with file:line:column.
//
// Usage:
//   struct ServerConfig { std::string listen_address; uint16_t listen_port; };
//   const auto schema = config::Schema<ServerConfig>("mdcast-server")
//       .address("listen.address", &ServerConfig::listen_address, "0.0.0.0", "Address to bind.")
//       .integer("listen.port", &ServerConfig::listen_port, 9000, 1, 65535, "TCP port.");
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

// What a daemon did with the changed keys on SIGHUP.
struct ReloadResult {
    std::vector<std::string> applied;  // in effect from now on
    std::vector<std::string> failed;   // reloadable, but the files they name did not load
};

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

// Why a single value was rejected. `mark` points inside the value (e.g. at one bad element of
// a list); when null, the error is reported at the value itself.
struct ValueError {
    std::string message;
    YAML::Mark mark = YAML::Mark::null_mark();
};

// What the loader and describe() know about one key, independent of the target struct.
struct KeyInfo {
    std::string key;
    std::string type;          // "integer", "real", "boolean", "string", ...
    std::string default_text;  // default rendered for humans
    std::string constraint;    // "range 1..65535", "one of: a, b", or empty
    std::string doc;
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

// Result of reading an integer scalar before the range check, so that one parser serves
// every integral member type.
struct ParsedInteger {
    bool negative = false;
    bool overflow = false;  // does not fit in intmax_t / uintmax_t at all
    intmax_t negative_value = 0;
    uintmax_t positive_value = 0;
};

// Scalar converters: return false and fill `error` when the node is not an acceptable value.
bool parse_integer(const YAML::Node& node, ParsedInteger& out, ValueError& error);
std::string out_of_range_message(const YAML::Node& node, const std::string& min,
                                 const std::string& max);
bool convert_real(const YAML::Node& node, double min, double max, double& out, ValueError& error);
bool convert_boolean(const YAML::Node& node, bool& out, ValueError& error);
bool convert_string(const YAML::Node& node, std::string& out, ValueError& error);
bool convert_address(const YAML::Node& node, std::string& out, ValueError& error);
bool convert_choice(const YAML::Node& node, const std::vector<std::string>& allowed,
                    std::string& out, ValueError& error);
bool convert_string_list(const YAML::Node& node, std::vector<std::string>& out, ValueError& error);

// Rendering of defaults and constraints for describe().
std::string real_text(double value);
std::string quoted(const std::string& value);
std::string list_text(const std::vector<std::string>& values);

template <class M>
bool integer_in_range(const ParsedInteger& parsed, M min, M max) {
    if (parsed.overflow) return false;
    if (parsed.negative) {
        return std::cmp_greater_equal(parsed.negative_value, min) &&
               std::cmp_less_equal(parsed.negative_value, max);
    }
    return std::cmp_greater_equal(parsed.positive_value, min) &&
           std::cmp_less_equal(parsed.positive_value, max);
}

// Any integral type except bool (which has its own converter) and character types.
template <class M>
bool convert_integer(const YAML::Node& node, M min, M max, M& out, ValueError& error) {
    ParsedInteger parsed;
    if (!parse_integer(node, parsed, error)) return false;
    if (!integer_in_range(parsed, min, max)) {
        error.message = out_of_range_message(node, std::to_string(min), std::to_string(max));
        return false;
    }
    out = parsed.negative ? static_cast<M>(parsed.negative_value)
                          : static_cast<M>(parsed.positive_value);
    return true;
}

// A member's value as the reload log shows it.
inline std::string value_text(bool value) {
    return value ? "true" : "false";
}
inline std::string value_text(double value) {
    return real_text(value);
}
inline std::string value_text(const std::string& value) {
    return quoted(value);
}
inline std::string value_text(const std::vector<std::string>& values) {
    return "[" + list_text(values) + "]";
}
template <class M>
requires std::is_integral_v<M> std::string value_text(M value) {
    return std::to_string(value);
}

// A member's value as a JSON value of its type (/info), encoded once.
std::string json_string(const std::string& value);
inline std::string value_json(bool value) {
    return value_text(value);
}
std::string value_json(double value);  // null when not finite
inline std::string value_json(const std::string& value) {
    return json_string(value);
}
std::string value_json(const std::vector<std::string>& values);
template <class M>
requires std::is_integral_v<M> std::string value_json(M value) {
    return std::to_string(value);
}

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
        static_assert(std::is_integral_v<M> && !std::is_same_v<M, bool>,
                      "integer() needs an integral member; use boolean() for bool");
        std::string range = "range " + std::to_string(min) + ".." + std::to_string(max);
        return add({std::move(key), "integer", std::to_string(default_value), std::move(range),
                    std::move(doc)},
                   member, default_value,
                   [member, min, max](const YAML::Node& node, T& target, ValueError& error) {
                       return detail::convert_integer(node, min, max, target.*member, error);
                   });
    }

    Schema& real(std::string key, double T::*member, double default_value, double min, double max,
                 std::string doc) {
        std::string range = "range " + detail::real_text(min) + ".." + detail::real_text(max);
        return add({std::move(key), "real", detail::real_text(default_value), std::move(range),
                    std::move(doc)},
                   member, default_value,
                   [member, min, max](const YAML::Node& node, T& target, ValueError& error) {
                       return detail::convert_real(node, min, max, target.*member, error);
                   });
    }

    Schema& boolean(std::string key, bool T::*member, bool default_value, std::string doc) {
        return add(
            {std::move(key), "boolean", default_value ? "true" : "false", "", std::move(doc)},
            member, default_value, [member](const YAML::Node& node, T& target, ValueError& error) {
                return detail::convert_boolean(node, target.*member, error);
            });
    }

    Schema& string(std::string key, std::string T::*member, std::string default_value,
                   std::string doc) {
        std::string shown = detail::quoted(default_value);
        return add({std::move(key), "string", std::move(shown), "", std::move(doc)}, member,
                   std::move(default_value),
                   [member](const YAML::Node& node, T& target, ValueError& error) {
                       return detail::convert_string(node, target.*member, error);
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
                return detail::convert_address(node, target.*member, error);
            });
    }

    // String restricted to `allowed` (compared exactly, case-sensitive).
    Schema& choice(std::string key, std::string T::*member, std::string default_value,
                   std::vector<std::string> allowed, std::string doc) {
        std::string shown = detail::quoted(default_value);
        std::string constraint = "one of: " + detail::list_text(allowed);
        return add(
            {std::move(key), "choice", std::move(shown), std::move(constraint), std::move(doc)},
            member, std::move(default_value),
            [member, allowed = std::move(allowed)](const YAML::Node& node, T& target,
                                                   ValueError& error) {
                return detail::convert_choice(node, allowed, target.*member, error);
            });
    }

    Schema& string_list(std::string key, std::vector<std::string> T::*member,
                        std::vector<std::string> default_value, std::string doc) {
        std::string shown = "[" + detail::list_text(default_value) + "]";
        return add({std::move(key), "string list", std::move(shown), "", std::move(doc)}, member,
                   std::move(default_value),
                   [member](const YAML::Node& node, T& target, ValueError& error) {
                       return detail::convert_string_list(node, target.*member, error);
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

    // Copies the changed keys that are in `reloadable` from `from` to `to`;
    // returns their names (a daemon's SIGHUP reload of plain settings).
    std::vector<std::string> apply_changes(const std::vector<ConfigChange>& changes,
                                           const std::vector<std::string>& reloadable,
                                           const T& from, T& to) const {
        std::vector<std::string> applied;
        for (const auto& change : changes) {
            if (std::find(reloadable.begin(), reloadable.end(), change.key) == reloadable.end())
                continue;
            if (copy_key(change.key, from, to)) applied.push_back(change.key);
        }
        return applied;
    }

    // The keys of `changes` that are in `keys`.
    static std::vector<std::string> changed_among(const std::vector<ConfigChange>& changes,
                                                  const std::vector<std::string>& keys) {
        std::vector<std::string> result;
        for (const auto& change : changes) {
            if (std::find(keys.begin(), keys.end(), change.key) != keys.end())
                result.push_back(change.key);
        }
        return result;
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

    template <class M>
    Schema& add(detail::KeyInfo info, M T::*member, M default_value, Applier applier) {
        std::string name = info.key;
        core_.add(std::move(info));
        defaults_.push_back(
            [member, value = std::move(default_value)](T& target) { target.*member = value; });
        appliers_.push_back(std::move(applier));
        keys_.push_back({std::move(name),
                         [member](const T& a, const T& b) { return a.*member == b.*member; },
                         [member](const T& value) { return detail::value_text(value.*member); },
                         [member](const T& value) { return detail::value_json(value.*member); },
                         [member](const T& from, T& to) { to.*member = from.*member; }});
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
