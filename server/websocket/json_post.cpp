#include "server/websocket/json_post.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace mdcast::server {

using proto::FieldType;

namespace {

// "45.55" -> 4555, -2; at most 15 significant digits, as the double carries them.
bool set_decimal(double real, ::mdcast::wire::v1::Decimal& decimal) {
    if (!std::isfinite(real)) return false;
    char text[40];
    std::snprintf(text, sizeof text, "%.15g", real);
    std::string digits;
    int32_t exponent = 0;
    bool after_point = false;
    const char* p = text;
    const bool negative = *p == '-';
    if (negative) ++p;
    for (; *p && *p != 'e'; ++p) {
        if (*p == '.') {
            after_point = true;
        } else {
            digits += *p;
            if (after_point) --exponent;
        }
    }
    if (*p == 'e') exponent += std::atoi(p + 1);
    int64_t mantissa = 0;
    if (std::from_chars(digits.data(), digits.data() + digits.size(), mantissa).ec != std::errc())
        return false;
    decimal.set_mantissa(negative ? -mantissa : mantissa);
    decimal.set_exponent(exponent);
    return true;
}

// "2026-11-28T10:00:00.123456789Z" -> ns since the epoch.
bool parse_time(const std::string& text, int64_t& ns) {
    std::tm tm{};
    int consumed = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                    &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6)
        return false;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    int64_t fraction = 0;
    size_t at = static_cast<size_t>(consumed);
    if (at < text.size() && text[at] == '.') {
        int64_t scale = 1'000'000'000;
        for (++at; at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])); ++at) {
            scale /= 10;
            fraction += (text[at] - '0') * scale;
        }
    }
    if (at + 1 != text.size() || text[at] != 'Z') return false;
    ns = static_cast<int64_t>(timegm(&tm)) * 1'000'000'000 + fraction;
    return true;
}

bool set_value(const JsonScalar& value, FieldType type, ::mdcast::wire::v1::FieldValue& field) {
    using Kind = JsonScalar::Kind;
    if (value.kind == Kind::kNull) {
        field.mutable_blank();
        return true;
    }
    switch (type) {
        case FieldType::kInt:
            if (value.kind != Kind::kInt) return false;
            field.set_int_value(value.integer);
            return true;
        case FieldType::kDecimal:
            if (value.kind == Kind::kInt) {
                field.mutable_decimal_value()->set_mantissa(value.integer);
                return true;
            }
            return value.kind == Kind::kFloat &&
                   set_decimal(value.real, *field.mutable_decimal_value());
        case FieldType::kDouble:
            if (value.kind == Kind::kString) return false;
            field.set_double_value(value.kind == Kind::kInt ? static_cast<double>(value.integer)
                                                            : value.real);
            return true;
        case FieldType::kString:
            if (value.kind != Kind::kString) return false;
            field.set_string_value(value.text);
            return true;
        case FieldType::kTime: {
            if (value.kind == Kind::kInt) {
                field.set_time_ns(value.integer);
                return true;
            }
            int64_t ns = 0;
            if (value.kind != Kind::kString || !parse_time(value.text, ns)) return false;
            field.set_time_ns(ns);
            return true;
        }
    }
    return false;
}

const proto::FieldDefinition* definition_of(const std::string& key,
                                            const proto::FieldDictionary& dictionary) {
    if (const auto* named = dictionary.find(key)) return named;
    uint32_t id = 0;
    const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (error != std::errc() || end != key.data() + key.size()) return nullptr;
    return dictionary.find(id);
}

}  // namespace

std::optional<::mdcast::wire::v1::FieldList> post_field_list(
    const std::vector<std::pair<std::string, JsonScalar>>& fields,
    const proto::FieldDictionary& dictionary, std::string& why) {
    ::mdcast::wire::v1::FieldList list;
    for (const auto& [key, value] : fields) {
        const proto::FieldDefinition* definition = definition_of(key, dictionary);
        if (!definition) {
            why = "no field named " + key.substr(0, 64);
            return std::nullopt;
        }
        ::mdcast::wire::v1::FieldValue* field = list.add_fields();
        field->set_id(definition->id);
        if (!set_value(value, definition->type, *field)) {
            why = "the value of " + definition->name + " does not fit its type";
            return std::nullopt;
        }
    }
    return list;
}

}  // namespace mdcast::server
