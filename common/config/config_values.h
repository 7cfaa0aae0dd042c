// The scalar converters and renderers behind the schema's rows: a YAML value checked and
// converted to a member's type (with the reason when it is refused), and a member's value
// rendered as --help-config and the reload log show it.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace mdcast::config::detail {

// Why a single value was rejected. `mark` points inside the value (e.g. at one bad element of
// a list); when null, the error is reported at the value itself.
struct ValueError {
    std::string message;
    YAML::Mark mark = YAML::Mark::null_mark();
};

// Human name of what a node holds, for "expected X, got Y" messages.
std::string node_kind(const YAML::Node& node);

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
// A mapping of names to lists of strings (`IDN: [TRDPRC_1, TRDVOL_1]`).
using StringListMap = std::map<std::string, std::vector<std::string>>;
bool convert_string_list_map(const YAML::Node& node, StringListMap& out, ValueError& error);

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
std::string value_text(const StringListMap& values);
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
std::string value_json(const StringListMap& values);
template <class M>
requires std::is_integral_v<M> std::string value_json(M value) {
    return std::to_string(value);
}

}  // namespace mdcast::config::detail
