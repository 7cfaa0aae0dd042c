#include "field_values.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

namespace mdcast::python {
namespace {

FieldValue as_field_value(const EventBatch& batch, const StoredField& f) {
    return FieldValue{f.id, f.kind, f.exponent, f.integer, f.real, batch.text(f.text)};
}

// Parses "[-]digits[.digits][e[+-]digits]" into mantissa and exponent.
bool parse_decimal(std::string_view text, int64_t& mantissa, int32_t& exponent) {
    std::string digits;
    int32_t exp = 0;
    bool negative = false, seen_point = false;
    size_t i = 0;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
    for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
        if (text[i] == '.' && !seen_point) {
            seen_point = true;
        } else if (text[i] >= '0' && text[i] <= '9') {
            digits.push_back(text[i]);
            if (seen_point) --exp;
        } else {
            return false;
        }
    }
    if (i < text.size()) {
        int32_t e = 0;
        auto [end, ec] = std::from_chars(text.data() + i + 1 + (text[i + 1] == '+'),
                                         text.data() + text.size(), e);
        if (ec != std::errc() || end != text.data() + text.size()) return false;
        exp += e;
    }
    // Trailing zeros move into the exponent so that 1e20 still fits.
    while (digits.size() > 1 && digits.back() == '0') {
        digits.pop_back();
        ++exp;
    }
    if (digits.empty() || digits.size() > 18) return false;
    mantissa = std::stoll(digits) * (negative ? -1 : 1);
    exponent = exp;
    return true;
}

int64_t datetime_to_ns(py::handle value) {
    py::module_ datetime = py::module_::import("datetime");
    py::object dt = py::reinterpret_borrow<py::object>(value);
    if (dt.attr("tzinfo").is_none()) {
        dt = dt.attr("replace")(py::arg("tzinfo") = datetime.attr("timezone").attr("utc"));
    }
    py::object epoch = datetime.attr("datetime")(
        1970, 1, 1, py::arg("tzinfo") = datetime.attr("timezone").attr("utc"));
    py::object delta = dt - epoch;
    const int64_t days = delta.attr("days").cast<int64_t>();
    const int64_t seconds = delta.attr("seconds").cast<int64_t>();
    const int64_t micros = delta.attr("microseconds").cast<int64_t>();
    return ((days * 86400 + seconds) * 1000000 + micros) * 1000;
}

[[noreturn]] void wrong_type(std::string_view name, const char* kind, py::handle value) {
    throw py::type_error(std::string(name) + " is " + kind + ", not " +
                         std::string(py::str(py::type::handle_of(value).attr("__name__"))));
}

}  // namespace

std::pair<int64_t, int32_t> python_decimal(std::string_view name, py::handle value) {
    if (py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value))
        return {value.cast<int64_t>(), 0};
    std::string text;
    if (py::isinstance<py::float_>(value)) {
        const double d = value.cast<double>();
        if (!std::isfinite(d))
            throw py::value_error(std::string(name) + ": " + std::to_string(d) +
                                  " is not a decimal");
        char buffer[64];
        auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, d);  // shortest form
        text.assign(buffer, end);
    } else if (py::isinstance<py::str>(value) ||
               py::str(py::type::handle_of(value).attr("__name__")).cast<std::string>() ==
                   "Decimal") {
        text = py::str(value).cast<std::string>();
    } else {
        wrong_type(name, "DECIMAL", value);
    }
    int64_t mantissa = 0;
    int32_t exponent = 0;
    if (!parse_decimal(text, mantissa, exponent)) {
        throw py::value_error(std::string(name) + ": '" + text +
                              "' is not a decimal of at most 18 digits");
    }
    return {mantissa, exponent};
}

double decimal_to_double(int64_t mantissa, int32_t exponent) {
    // 10^k is exact in a double for k <= 22, so one division or product rounds once.
    static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                        1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                        1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const double m = static_cast<double>(mantissa);
    if (exponent < 0 && exponent >= -22) return m / kPow10[-exponent];
    if (exponent >= 0 && exponent <= 22) return m * kPow10[exponent];
    return m * std::pow(10.0, exponent);
}

py::object value_to_python(FieldKind kind, int64_t integer, int32_t exponent, double real,
                           std::string_view text) {
    switch (kind) {
        case FieldKind::kInt:
        case FieldKind::kTime:
            return py::int_(integer);
        case FieldKind::kDecimal:
            return py::float_(decimal_to_double(integer, exponent));
        case FieldKind::kDouble:
            return py::float_(real);
        case FieldKind::kString:
            return py::reinterpret_steal<py::object>(
                PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace"));
        case FieldKind::kBlank:
            break;
    }
    return py::none();
}

py::object field_to_python(const EventBatch& batch, const StoredField& f) {
    const std::string_view text = f.kind == FieldKind::kString ? batch.text(f.text) : "";
    return value_to_python(f.kind, f.integer, f.exponent, f.real, text);
}

std::string field_to_text(const EventBatch& batch, const StoredField& f) {
    return as_field_value(batch, f).to_string();
}

void add_python_field(FieldList& fields, uint32_t id, FieldKind kind, std::string_view name,
                      py::handle value) {
    const bool is_int = py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value);
    if (value.is_none()) {
        fields.add_blank(id);
    } else if (kind == FieldKind::kDecimal) {
        const auto [mantissa, exponent] = python_decimal("field " + std::string(name), value);
        fields.add_decimal(id, mantissa, exponent);
    } else if (kind == FieldKind::kInt) {
        if (!is_int) wrong_type("field " + std::string(name), "INT", value);
        fields.add_int(id, value.cast<int64_t>());
    } else if (kind == FieldKind::kDouble) {
        if (!is_int && !py::isinstance<py::float_>(value))
            wrong_type("field " + std::string(name), "DOUBLE", value);
        fields.add_double(id, value.cast<double>());
    } else if (kind == FieldKind::kString) {
        if (!py::isinstance<py::str>(value))
            wrong_type("field " + std::string(name), "STRING", value);
        fields.add_string(id, value.cast<std::string>());
    } else if (kind == FieldKind::kTime) {
        if (is_int) {
            fields.add_time(id, value.cast<int64_t>());
        } else if (py::hasattr(value, "tzinfo") && py::hasattr(value, "hour")) {
            fields.add_time(id, datetime_to_ns(value));
        } else {
            wrong_type("field " + std::string(name), "TIME", value);
        }
    } else {
        fields.add_blank(id);
    }
}

void fill_field_list(FieldList& fields, const Dictionary& dictionary, const py::dict& values) {
    for (auto [key, value] : values) {
        uint32_t id = 0;
        std::string name;
        if (py::isinstance<py::int_>(key)) {
            id = key.cast<uint32_t>();
            name = std::to_string(id);
        } else {
            name = key.cast<std::string>();
            const auto found = dictionary.id(name);
            if (!found) throw py::key_error("unknown field " + name + " (not in the dictionary)");
            id = *found;
        }
        const auto kind = dictionary.kind(id);
        if (!kind) throw py::key_error("unknown field id " + name + " (not in the dictionary)");
        add_python_field(fields, id, *kind, name, value);
    }
}

}  // namespace mdcast::python
