#include "common/config/config_values.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <locale>
#include <sstream>
#include <string_view>

namespace mdcast::config::detail {

namespace {

bool require_scalar(const YAML::Node& node, const std::string& expected, ValueError& error) {
    if (node.IsScalar()) return true;
    error.message = "expected " + expected + ", got " + node_kind(node);
    return false;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
        return std::tolower(static_cast<unsigned char>(x)) ==
               std::tolower(static_cast<unsigned char>(y));
    });
}

}  // namespace

// Human name of what a node holds, for "expected X, got Y" messages.
std::string node_kind(const YAML::Node& node) {
    switch (node.Type()) {
        case YAML::NodeType::Map:
            return "a mapping";
        case YAML::NodeType::Sequence:
            return "a list";
        case YAML::NodeType::Scalar:
            return "'" + node.Scalar() + "'";
        default:
            return "nothing";
    }
}

bool parse_integer(const YAML::Node& node, ParsedInteger& out, ValueError& error) {
    if (!require_scalar(node, "an integer", error)) return false;
    std::string_view text = node.Scalar();
    bool negative = !text.empty() && text.front() == '-';
    if (!text.empty() && (text.front() == '-' || text.front() == '+')) text.remove_prefix(1);
    int base = 10;
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        base = 16;
        text.remove_prefix(2);
    }
    uintmax_t magnitude = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), magnitude, base);
    if (text.empty() || end != text.data() + text.size() ||
        (ec != std::errc() && ec != std::errc::result_out_of_range)) {
        error.message = "expected an integer, got '" + node.Scalar() + "'";
        return false;
    }
    constexpr auto kMaxNegative = static_cast<uintmax_t>(std::numeric_limits<intmax_t>::max()) + 1;
    out = ParsedInteger{};
    out.negative = negative && magnitude != 0;
    out.overflow = ec == std::errc::result_out_of_range || (negative && magnitude > kMaxNegative);
    if (out.overflow) return true;
    if (out.negative) {
        // -(magnitude - 1) - 1 avoids overflowing on the most negative value.
        out.negative_value = -static_cast<intmax_t>(magnitude - 1) - 1;
    } else {
        out.positive_value = magnitude;
    }
    return true;
}

std::string out_of_range_message(const YAML::Node& node, const std::string& min,
                                 const std::string& max) {
    return node.Scalar() + " is out of range (allowed " + min + ".." + max + ")";
}

bool convert_real(const YAML::Node& node, double min, double max, double& out, ValueError& error) {
    if (!require_scalar(node, "a real number", error)) return false;
    std::string_view text = node.Scalar();
    if (!text.empty() && text.front() == '+') text.remove_prefix(1);
    double value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
        !std::isfinite(value)) {
        error.message = "expected a real number, got '" + node.Scalar() + "'";
        return false;
    }
    if (value < min || value > max) {
        error.message = out_of_range_message(node, real_text(min), real_text(max));
        return false;
    }
    out = value;
    return true;
}

bool convert_boolean(const YAML::Node& node, bool& out, ValueError& error) {
    if (!require_scalar(node, "a boolean", error)) return false;
    const std::string& text = node.Scalar();
    // YAML 1.1 spellings, which is what people write in config files.
    static constexpr std::pair<std::string_view, bool> kBooleanWords[] = {
        {"true", true},   {"yes", true}, {"on", true},
        {"false", false}, {"no", false}, {"off", false}};
    for (const auto& [word, value] : kBooleanWords) {
        if (equals_ignoring_case(text, word)) {
            out = value;
            return true;
        }
    }
    error.message = "expected a boolean (true/false, yes/no, on/off), got '" + text + "'";
    return false;
}

bool convert_string(const YAML::Node& node, std::string& out, ValueError& error) {
    if (!require_scalar(node, "a string", error)) return false;
    out = node.Scalar();
    return true;
}

bool convert_address(const YAML::Node& node, std::string& out, ValueError& error) {
    if (!require_scalar(node, "an IP address", error)) return false;
    const std::string& text = node.Scalar();
    unsigned char buffer[sizeof(struct in6_addr)];
    if (inet_pton(AF_INET, text.c_str(), buffer) != 1 &&
        inet_pton(AF_INET6, text.c_str(), buffer) != 1) {
        error.message = "'" + text +
                        "' is not an IPv4 or IPv6 address (host names are not "
                        "accepted)";
        return false;
    }
    out = text;
    return true;
}

bool convert_choice(const YAML::Node& node, const std::vector<std::string>& allowed,
                    std::string& out, ValueError& error) {
    if (!require_scalar(node, "one of: " + list_text(allowed), error)) return false;
    const std::string& text = node.Scalar();
    if (std::find(allowed.begin(), allowed.end(), text) == allowed.end()) {
        error.message = "'" + text + "' is not one of: " + list_text(allowed);
        return false;
    }
    out = text;
    return true;
}

bool convert_string_list(const YAML::Node& node, std::vector<std::string>& out, ValueError& error) {
    if (!node.IsSequence()) {
        error.message = "expected a list of strings, got " + node_kind(node);
        return false;
    }
    std::vector<std::string> values;
    for (size_t i = 0; i < node.size(); ++i) {
        const YAML::Node element = node[i];
        if (!element.IsScalar()) {
            error.message = "list element " + std::to_string(i + 1) + " must be a string, got " +
                            node_kind(element);
            if (!element.IsNull()) error.mark = element.Mark();
            return false;
        }
        values.push_back(element.Scalar());
    }
    out = std::move(values);
    return true;
}

bool convert_string_list_map(const YAML::Node& node, StringListMap& out, ValueError& error) {
    if (!node.IsMap()) {
        error.message = "expected a mapping of names to lists of strings, got " + node_kind(node);
        return false;
    }
    StringListMap values;
    for (const auto& pair : node) {
        if (!pair.first.IsScalar()) {
            error.message = "a name must be a string, got " + node_kind(pair.first);
            error.mark = pair.first.Mark();
            return false;
        }
        const std::string name = pair.first.Scalar();
        if (values.contains(name)) {
            error.message = name + " is listed twice";
            error.mark = pair.first.Mark();
            return false;
        }
        if (!convert_string_list(pair.second, values[name], error)) {
            error.message = name + ": " + error.message;
            if (error.mark.is_null()) error.mark = pair.second.Mark();
            return false;
        }
    }
    out = std::move(values);
    return true;
}

std::string real_text(double value) {
    std::ostringstream text;
    text.imbue(std::locale::classic());
    text << value;
    return text.str();
}

std::string quoted(const std::string& value) {
    return "\"" + value + "\"";
}

std::string list_text(const std::vector<std::string>& values) {
    std::string text;
    for (const auto& value : values) {
        if (!text.empty()) text += ", ";
        text += value;
    }
    return text;
}

std::string json_string(const std::string& value) {
    std::string out = "\"";
    for (const char c : value) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
            out += escaped;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

std::string value_json(double value) {
    return std::isfinite(value) ? real_text(value) : "null";
}

std::string value_json(const std::vector<std::string>& values) {
    std::string out = "[";
    for (const auto& value : values) out += (out.size() > 1 ? "," : "") + json_string(value);
    return out + "]";
}

std::string value_text(const StringListMap& values) {
    std::string text;
    for (const auto& [name, list] : values)
        text += (text.empty() ? "" : ", ") + name + ": " + value_text(list);
    return "{" + text + "}";
}

std::string value_json(const StringListMap& values) {
    std::string out = "{";
    for (const auto& [name, list] : values)
        out += (out.size() > 1 ? "," : "") + json_string(name) + ":" + value_json(list);
    return out + "}";
}

}  // namespace mdcast::config::detail
