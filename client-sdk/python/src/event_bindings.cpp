// Python's view of received events: Event (one record of a batch, decoded on
// access) and Batch (everything one take() handed over).
#include <pybind11/stl.h>

#include <cmath>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "bindings.h"
#include "book_values.h"
#include "event_batch.h"
#include "field_values.h"

namespace mdcast::python {
namespace {

using BatchPtr = std::shared_ptr<EventBatch>;

std::string_view stream_name(StreamState s) {
    return s == StreamState::kOpen ? "open" : "closed";
}
std::string_view data_name(DataState d) {
    return d == DataState::kOk ? "ok" : "suspect";
}

// A field key: a dictionary name or a numeric id. nullopt: a name the
// dictionary does not know.
std::optional<uint32_t> field_id(const EventBatch& batch, py::handle key) {
    if (PyUnicode_Check(key.ptr())) {
        Py_ssize_t size = 0;
        const char* name = PyUnicode_AsUTF8AndSize(key.ptr(), &size);
        if (!name) throw py::error_already_set();
        if (!batch.dictionary()) return std::nullopt;
        return batch.dictionary()->id(std::string_view(name, static_cast<size_t>(size)));
    }
    return key.cast<uint32_t>();
}

py::object field_name(const EventBatch& batch, uint32_t id) {
    const auto name = batch.dictionary() ? batch.dictionary()->name(id) : std::string_view();
    if (name.empty()) return py::int_(id);
    return py::str(name.data(), name.size());
}

// One event of a batch; holds the batch alive.
struct EventRef {
    BatchPtr batch;
    uint32_t index = 0;

    const EventRecord& r() const { return batch->record(index); }
    py::str text(TextRef ref) const {
        const auto t = batch->text(ref);
        return py::str(t.data(), t.size());
    }
    const StoredField* find(py::handle key) const {
        const auto id = field_id(*batch, key);
        return id ? batch->field(r(), *id) : nullptr;
    }
    py::object get(py::handle key, py::object fallback) const {
        const StoredField* f = find(key);
        return f ? field_to_python(*batch, *f) : fallback;
    }
    py::object getitem(py::handle key) const {
        const StoredField* f = find(key);
        if (!f) throw py::key_error(py::repr(key).cast<std::string>());
        return field_to_python(*batch, *f);
    }
    py::dict fields() const { return to_dict(batch->fields(r())); }
    py::dict to_dict(std::span<const StoredField> fields) const {
        py::dict out;
        for (const StoredField& f : fields)
            out[field_name(*batch, f.id)] = field_to_python(*batch, f);
        return out;
    }
    // mdcast.BookEntry(key, action, fields) for each entry or action, in order.
    py::list book_entries() const {
        const auto entries = batch->entries(r());
        py::list out(entries.size());
        if (entries.empty()) return out;
        const py::object make = py::module_::import("mdcast._book").attr("BookEntry");
        for (size_t i = 0; i < entries.size(); ++i) {
            const StoredEntry& e = entries[i];
            out[i] = make(book_key_to_python(*batch, e), action_name(e.action),
                          to_dict(batch->fields(e)));
        }
        return out;
    }
    std::string repr() const;
};

std::string EventRef::repr() const {
    const EventRecord& e = r();
    std::string out = "<mdcast.Event " + std::string(event_type_name(e.type));
    if (e.type == EventType::kConnection) {
        const ConnectionEvent& c = batch->connection(e);
        out += " " + std::string(connection_state_name(c.state)) + " " + c.server.to_string();
    } else if (e.type != EventType::kDirectory) {
        out += " " + std::string(batch->text(e.service)) + "/" + std::string(batch->text(e.item));
        out += " seq=" + std::to_string(e.sequence) + " " + std::string(stream_name(e.stream)) +
               "/" + std::string(data_name(e.data));
        if (e.code != StatusCode::kNone) out += " " + std::string(status_code_name(e.code));
        out += " fields=" + std::to_string(e.field_count);
    }
    return out + ">";
}

void bind_event(py::module_& m) {
    py::class_<EventRef>(m, "Event", "One refresh, update, status, connection or directory event.")
        .def_property_readonly(
            "kind", [](const EventRef& e) { return event_type_name(e.r().type); },
            "'refresh', 'update', 'status', 'connection' or 'directory'.")
        .def_property_readonly("handle", [](const EventRef& e) { return e.r().handle; })
        .def_property_readonly("service", [](const EventRef& e) { return e.text(e.r().service); })
        .def_property_readonly("item", [](const EventRef& e) { return e.text(e.r().item); })
        .def_property_readonly("sequence", [](const EventRef& e) { return e.r().sequence; })
        .def_property_readonly("publish_time_ns",
                               [](const EventRef& e) { return e.r().publish_time_ns; })
        .def_property_readonly("receive_time_ns",
                               [](const EventRef& e) { return e.r().receive_time_ns; })
        .def_property_readonly("snapshot", [](const EventRef& e) { return e.r().snapshot; })
        .def_property_readonly("conflated", [](const EventRef& e) { return e.r().conflated; })
        .def_property_readonly("trade", [](const EventRef& e) { return e.r().trade; })
        .def_property_readonly("stands_for", [](const EventRef& e) { return e.r().stands_for; })
        .def_property_readonly("first_publish_time_ns",
                               [](const EventRef& e) { return e.r().first_publish_time_ns; })
        .def_property_readonly("stream_state",
                               [](const EventRef& e) { return stream_name(e.r().stream); })
        .def_property_readonly("data_state",
                               [](const EventRef& e) { return data_name(e.r().data); })
        .def_property_readonly("status_code", [](const EventRef& e) { return e.r().code; })
        .def_property_readonly("status_text", [](const EventRef& e) { return e.text(e.r().text); })
        .def_property_readonly("ok",
                               [](const EventRef& e) {
                                   return e.r().stream == StreamState::kOpen &&
                                          e.r().data == DataState::kOk;
                               })
        .def_property_readonly("fields", &EventRef::fields)
        .def_property_readonly(
            "domain", [](const EventRef& e) { return domain_name(e.r().domain); },
            "A refresh's domain: 'MarketPrice' (a field list) or a book's "
            "('MarketByPrice', 'MarketByOrder', 'SymbolList').")
        .def_property_readonly("book_entries", &EventRef::book_entries,
                               "A book refresh's entries or a book update's actions, in order "
                               "(mdcast.BookEntry); empty otherwise.")
        .def("__getitem__", &EventRef::getitem, py::arg("field"))
        .def("get", &EventRef::get, py::arg("field"), py::arg("default") = py::none())
        .def("__contains__",
             [](const EventRef& e, py::handle key) { return e.find(key) != nullptr; })
        .def(
            "text",
            [](const EventRef& e, py::handle key) -> py::object {
                const StoredField* f = e.find(key);
                if (!f) return py::none();
                return py::str(field_to_text(*e.batch, *f));
            },
            py::arg("field"))
        .def_property_readonly(
            "connection_state",
            [](const EventRef& e) -> py::object {
                if (e.r().type != EventType::kConnection) return py::none();
                return py::str(connection_state_name(e.batch->connection(e.r()).state));
            })
        .def_property_readonly("server",
                               [](const EventRef& e) -> py::object {
                                   if (e.r().type != EventType::kConnection) return py::none();
                                   return py::str(e.batch->connection(e.r()).server.to_string());
                               })
        .def_property_readonly("server_id",
                               [](const EventRef& e) -> py::object {
                                   if (e.r().type != EventType::kConnection) return py::none();
                                   return py::str(e.batch->connection(e.r()).server_id);
                               })
        .def_property_readonly("close_reason",
                               [](const EventRef& e) -> py::object {
                                   if (e.r().type != EventType::kConnection) return py::none();
                                   return py::str(e.batch->connection(e.r()).close_reason);
                               })
        .def_property_readonly("attempt",
                               [](const EventRef& e) -> uint32_t {
                                   return e.r().type == EventType::kConnection
                                              ? e.batch->connection(e.r()).attempt
                                              : 0;
                               })
        .def_property_readonly("services",
                               [](const EventRef& e) {
                                   const auto s = e.batch->services(e.r());
                                   return std::vector<ServiceInfo>(s.begin(), s.end());
                               })
        .def("__repr__", &EventRef::repr);
}

py::list batch_events(const BatchPtr& batch) {
    py::list out(batch->size());
    for (size_t i = 0; i < batch->size(); ++i) {
        out[i] = py::cast(EventRef{batch, static_cast<uint32_t>(i)});
    }
    return out;
}

// The value of `key` in every event of the batch (`fallback` where absent): the
// fast path for reading one field of many updates.
py::list batch_values(const BatchPtr& batch, py::handle key, py::object fallback) {
    py::list out(batch->size());
    const auto id = field_id(*batch, key);
    for (size_t i = 0; i < batch->size(); ++i) {
        const StoredField* f = id ? batch->field(batch->record(i), *id) : nullptr;
        out[i] = f ? field_to_python(*batch, *f) : fallback;
    }
    return out;
}

template <typename Get>
py::list batch_column(const BatchPtr& batch, Get get) {
    py::list out(batch->size());
    for (size_t i = 0; i < batch->size(); ++i) out[i] = get(batch->record(i));
    return out;
}

void bind_batch(py::module_& m) {
    py::class_<EventBatch, std::shared_ptr<EventBatch>>(
        m, "Batch", "The events one read handed over, oldest first.")
        .def("__len__", &EventBatch::size)
        .def("__getitem__",
             [](const BatchPtr& b, Py_ssize_t i) {
                 if (i < 0) i += static_cast<Py_ssize_t>(b->size());
                 if (i < 0 || static_cast<size_t>(i) >= b->size()) throw py::index_error();
                 return EventRef{b, static_cast<uint32_t>(i)};
             })
        .def("__iter__", [](const BatchPtr& b) { return py::iter(batch_events(b)); })
        .def("events", &batch_events, "Every event as an Event object.")
        .def("values", &batch_values, py::arg("field"), py::arg("default") = py::none(),
             "The field's value in every event, in order; `default` where it is absent.")
        .def("items",
             [](const BatchPtr& b) {
                 return batch_column(b, [&](const EventRecord& r) {
                     return py::str(std::string(b->text(r.item)));
                 });
             })
        .def("sequences",
             [](const BatchPtr& b) {
                 return batch_column(b, [](const EventRecord& r) { return py::int_(r.sequence); });
             })
        .def("kinds",
             [](const BatchPtr& b) {
                 return batch_column(
                     b, [](const EventRecord& r) { return py::str(event_type_name(r.type)); });
             })
        .def("publish_times_ns", [](const BatchPtr& b) {
            return batch_column(b,
                                [](const EventRecord& r) { return py::int_(r.publish_time_ns); });
        });
}

}  // namespace

void bind_events(py::module_& m) {
    py::class_<ServiceInfo>(m, "Service", "One service of a directory answer.")
        .def_readonly("id", &ServiceInfo::id)
        .def_readonly("name", &ServiceInfo::name)
        .def_readonly("up", &ServiceInfo::up)
        .def_property_readonly("mode",
                               [](const ServiceInfo& s) {
                                   return s.mode == ServiceMode::kInteractive ? "interactive"
                                                                              : "broadcast";
                               })
        .def_readonly("item_count", &ServiceInfo::item_count)
        .def_readonly("group_members", &ServiceInfo::group_members)
        .def_readonly("group_active", &ServiceInfo::group_active)
        .def("__repr__", [](const ServiceInfo& s) {
            std::string group;
            if (s.group_members > 0) {
                group = " group=" + std::to_string(s.group_members) +
                        (s.group_active ? " active" : " standby");
            }
            return "<mdcast.Service " + s.name + (s.up ? " up" : " down") +
                   " items=" + std::to_string(s.item_count) + group + ">";
        });
    bind_event(m);
    bind_batch(m);
}

}  // namespace mdcast::python
