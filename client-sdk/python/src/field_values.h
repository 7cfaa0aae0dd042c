// Field values between C++ and Python.
//
// Received (consumer): BLANK -> None, INT -> int, DECIMAL -> float (correctly
// rounded), DOUBLE -> float, STRING -> str, TIME -> int (ns since the epoch, UTC).
// Published (publisher): the dictionary's kind of the field decides the
// encoding; see add_python_field().
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string_view>
#include <utility>

#include "event_batch.h"
#include "mdcast/dictionary.h"
#include "mdcast/field_list.h"

namespace mdcast::python {

namespace py = pybind11;

// mantissa * 10^exponent as the nearest double (not mantissa * pow(10, e),
// which rounds twice).
double decimal_to_double(int64_t mantissa, int32_t exponent);

// One value as Python sees it (above); `text` for strings.
py::object value_to_python(FieldKind kind, int64_t integer, int32_t exponent, double real,
                           std::string_view text);
py::object field_to_python(const EventBatch& batch, const StoredField& field);
// The exact text of a value: decimals as written ("101.25"), times ISO-8601.
std::string field_to_text(const EventBatch& batch, const StoredField& field);

// An int, float (its shortest decimal form), decimal.Decimal or str as
// (mantissa, exponent); `what` names the value in the error thrown otherwise.
std::pair<int64_t, int32_t> python_decimal(std::string_view what, py::handle value);

// Adds `value` as field `id` of dictionary kind `kind`: None is blank; INT
// takes int; DECIMAL takes int, float (its shortest decimal form: 101.25 is
// 10125e-2), decimal.Decimal or str; DOUBLE takes int or float; STRING takes
// str; TIME takes int ns or datetime.datetime (naive means UTC). Throws
// py::type_error / py::value_error naming the field otherwise.
void add_python_field(FieldList& fields, uint32_t id, FieldKind kind, std::string_view name,
                      py::handle value);

// Every (name or id -> value) of a mapping, resolved with `dictionary`.
void fill_field_list(FieldList& fields, const Dictionary& dictionary, const py::dict& values);

}  // namespace mdcast::python
