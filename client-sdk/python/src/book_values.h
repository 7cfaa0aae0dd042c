// Books between C++ and Python (docs/python.md, Books).
//
// A key is a decimal.Decimal for a price and a str for a name (bytes when the
// name is not UTF-8); published, a price may also be an int or a float (its
// shortest decimal form) and a name str or bytes. An action is 'add',
// 'update' or 'delete'; a domain the C++ enum's name ('MarketByPrice').
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "event_batch.h"
#include "mdcast/book.h"
#include "mdcast/dictionary.h"

namespace mdcast::python {

namespace py = pybind11;

Domain parse_domain(const std::string& name);
const char* action_name(MapAction action);

py::object book_key_to_python(const EventBatch& batch, const StoredEntry& entry);
BookKey book_key_from_python(py::handle key);

// A refresh's entries into `out`: a mapping {key: fields} or an iterable of
// (key, fields) pairs, each an add.
void fill_book_entries(BookChanges& out, FieldList& scratch, const Dictionary& dictionary,
                       py::handle entries);
// An update's actions into `out`, in order: an iterable of (key, action,
// fields) triples (mdcast.BookEntry) or (key, 'delete') pairs.
void fill_book_changes(BookChanges& out, FieldList& scratch, const Dictionary& dictionary,
                       py::handle changes);

}  // namespace mdcast::python
