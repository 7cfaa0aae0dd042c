#include "book_values.h"

#include <string_view>

#include "field_values.h"

namespace mdcast::python {
namespace {

MapAction parse_action(const std::string& name) {
    if (name == "add") return MapAction::kAdd;
    if (name == "update") return MapAction::kUpdate;
    if (name == "delete") return MapAction::kDelete;
    throw py::value_error("a book action is 'add', 'update' or 'delete', not '" + name + "'");
}

// Fields of an entry: a mapping (resolved with the dictionary) or None (none).
const FieldList& entry_fields(FieldList& scratch, const Dictionary& dictionary, py::handle fields) {
    scratch.clear();
    if (!fields.is_none())
        fill_field_list(scratch, dictionary, py::dict(py::reinterpret_borrow<py::object>(fields)));
    return scratch;
}

}  // namespace

Domain parse_domain(const std::string& name) {
    for (Domain d : {Domain::kMarketByPrice, Domain::kMarketByOrder, Domain::kSymbolList}) {
        if (domain_name(d) == name) return d;
    }
    throw py::value_error(
        "a book's domain is 'MarketByPrice', 'MarketByOrder' or 'SymbolList', "
        "not '" +
        name + "'");
}

const char* action_name(MapAction action) {
    switch (action) {
        case MapAction::kAdd:
            return "add";
        case MapAction::kUpdate:
            return "update";
        case MapAction::kDelete:
            break;
    }
    return "delete";
}

py::object book_key_to_python(const EventBatch& batch, const StoredEntry& entry) {
    if (entry.is_price) {
        // Whole prices written out (Decimal('100'), not the normalized key's '1E+2').
        std::string text = std::to_string(entry.mantissa);
        if (entry.mantissa == 0 || entry.exponent >= 0) {
            text.append(entry.mantissa == 0 ? 0 : static_cast<size_t>(entry.exponent), '0');
        } else {
            text += "E" + std::to_string(entry.exponent);
        }
        return py::module_::import("decimal").attr("Decimal")(text);
    }
    const std::string_view name = batch.text(entry.name);
    PyObject* str =
        PyUnicode_DecodeUTF8(name.data(), static_cast<Py_ssize_t>(name.size()), nullptr);
    if (str) return py::reinterpret_steal<py::object>(str);
    PyErr_Clear();  // not UTF-8: the bytes as they are
    return py::bytes(name.data(), name.size());
}

BookKey book_key_from_python(py::handle key) {
    if (py::isinstance<py::str>(key) || py::isinstance<py::bytes>(key)) {
        const std::string name = key.cast<std::string>();
        return BookKey::name(name);  // beyond its limits: ValueError
    }
    const auto [mantissa, exponent] = python_decimal("book key", key);
    return BookKey::price(mantissa, exponent);
}

void fill_book_entries(BookChanges& out, FieldList& scratch, const Dictionary& dictionary,
                       py::handle entries) {
    const py::object pairs = py::isinstance<py::dict>(entries)
                                 ? entries.attr("items")()
                                 : py::reinterpret_borrow<py::object>(entries);
    for (py::handle pair : pairs) {
        const py::tuple entry(py::reinterpret_borrow<py::object>(pair));
        if (entry.size() != 2) throw py::value_error("a book refresh's entry is (key, fields)");
        out.add(book_key_from_python(entry[0]), entry_fields(scratch, dictionary, entry[1]));
    }
}

void fill_book_changes(BookChanges& out, FieldList& scratch, const Dictionary& dictionary,
                       py::handle changes) {
    for (py::handle item : py::reinterpret_borrow<py::object>(changes)) {
        const py::tuple change(py::reinterpret_borrow<py::object>(item));
        if (change.size() != 2 && change.size() != 3)
            throw py::value_error("a book change is (key, action, fields) or (key, 'delete')");
        const BookKey key = book_key_from_python(change[0]);
        const MapAction action = parse_action(change[1].cast<std::string>());
        if (action == MapAction::kDelete) {
            out.remove(key);
            continue;
        }
        if (change.size() != 3) throw py::value_error("a book add or update needs its fields");
        const FieldList& fields = entry_fields(scratch, dictionary, change[2]);
        if (action == MapAction::kAdd) {
            out.add(key, fields);
        } else {
            out.update(key, fields);
        }
    }
}

}  // namespace mdcast::python
