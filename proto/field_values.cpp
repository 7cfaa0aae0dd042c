#include "proto/field_values.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <ctime>

namespace mdcast::proto {

namespace {

std::string format_time(int64_t ns) {
    const time_t seconds = static_cast<time_t>(ns / 1'000'000'000);
    const long nanos = static_cast<long>(ns % 1'000'000'000);
    std::tm tm{};
    if (nanos < 0 || gmtime_r(&seconds, &tm) == nullptr) return std::to_string(ns);
    char text[64];
    const size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(text + n, sizeof text - n, ".%09ldZ", nanos);
    return text;
}

}  // namespace

std::string format_decimal(int64_t mantissa, int32_t exponent) {
    const bool negative = mantissa < 0;
    // Magnitude as unsigned so INT64_MIN does not overflow.
    uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(mantissa) : mantissa;
    std::string digits = std::to_string(magnitude);
    const int shown = std::clamp(exponent, -30, 30);  // hostile input stays printable
    if (shown >= 0) {
        if (magnitude != 0) digits.append(static_cast<size_t>(shown), '0');
    } else {
        const auto scale = static_cast<size_t>(-shown);
        if (digits.size() <= scale) digits.insert(0, scale - digits.size() + 1, '0');
        digits.insert(digits.size() - scale, 1, '.');
    }
    return negative ? "-" + digits : digits;
}

std::string format_value(const wire::FieldValue& value) {
    switch (value.value_case()) {
        case wire::FieldValue::kIntValue:
            return std::to_string(value.int_value());
        case wire::FieldValue::kDecimalValue:
            return format_decimal(value.decimal_value().mantissa(),
                                  value.decimal_value().exponent());
        case wire::FieldValue::kDoubleValue: {
            char text[32];
            std::snprintf(text, sizeof text, "%.17g", value.double_value());
            return text;
        }
        case wire::FieldValue::kStringValue:
            return value.string_value();
        case wire::FieldValue::kTimeNs:
            return format_time(value.time_ns());
        case wire::FieldValue::kBlank:
        case wire::FieldValue::VALUE_NOT_SET:
            return "";
    }
    return "";
}

std::string json_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 2);
    for (const char c : text) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char hex[8];
                    std::snprintf(hex, sizeof hex, "\\u%04x", c);
                    out += hex;
                } else {
                    out += c;
                }
        }
    }
    return out;
}

std::string format_value_json(const wire::FieldValue& value) {
    switch (value.value_case()) {
        case wire::FieldValue::kIntValue:
        case wire::FieldValue::kDecimalValue:
            return format_value(value);
        case wire::FieldValue::kDoubleValue: {
            const double d = value.double_value();
            return d == d && d - d == 0 ? format_value(value) : "null";  // NaN/inf are not JSON
        }
        case wire::FieldValue::kStringValue:
        case wire::FieldValue::kTimeNs:
            return "\"" + json_escape(format_value(value)) + "\"";
        case wire::FieldValue::kBlank:
        case wire::FieldValue::VALUE_NOT_SET:
            return "null";
    }
    return "null";
}

}  // namespace mdcast::proto
