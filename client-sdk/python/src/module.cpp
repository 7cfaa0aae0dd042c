// _mdcast: the C++ part of the mdcast Python package. It binds libmdcast's
// public API (client-sdk/include/mdcast/) and nothing else; mdcast/*.py builds
// the Python API on top.
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "bindings.h"
#include "mdcast/consumer.h"
#include "mdcast/dictionary.h"
#include "mdcast/publisher.h"
#include "mdcast/scheduling.h"

namespace mdcast::python {
namespace {

// pybind11 holders cannot be const; a Dictionary is immutable anyway.
std::shared_ptr<Dictionary> mutable_dictionary(std::shared_ptr<const Dictionary> d) {
    return std::const_pointer_cast<Dictionary>(std::move(d));
}

std::string_view kind_name(FieldKind kind) {
    switch (kind) {
        case FieldKind::kBlank:
            return "BLANK";
        case FieldKind::kInt:
            return "INT";
        case FieldKind::kDecimal:
            return "DECIMAL";
        case FieldKind::kDouble:
            return "DOUBLE";
        case FieldKind::kString:
            return "STRING";
        case FieldKind::kTime:
            return "TIME";
    }
    return "UNKNOWN";
}

void bind_status_code(py::module_& m) {
    py::enum_<StatusCode>(m, "StatusCode",
                          "Why an item is in its state (the server's or the SDK's).")
        .value("NONE", StatusCode::kNone)
        .value("NOT_FOUND", StatusCode::kNotFound)
        .value("NOT_ENTITLED", StatusCode::kNotEntitled)
        .value("SOURCE_DOWN", StatusCode::kSourceDown)
        .value("UNRECOVERABLE_LOSS", StatusCode::kUnrecoverableLoss)
        .value("SOURCE_RESET", StatusCode::kSourceReset)
        .value("SERVER_SHUTDOWN", StatusCode::kServerShutdown)
        .value("LIMIT_REACHED", StatusCode::kLimitReached)
        .value("INVALID_REQUEST", StatusCode::kInvalidRequest)
        .value("RECOVERING", StatusCode::kRecovering)
        .value("CONNECTION_LOST", StatusCode::kConnectionLost)
        .value("CANCELLED", StatusCode::kCancelled);
}

void bind_dictionary(py::module_& m) {
    py::class_<Dictionary, std::shared_ptr<Dictionary>>(
        m, "Dictionary", "Field id <-> name <-> kind (etc/fields.dict).")
        .def_static(
            "load_file",
            [](const std::string& path) { return mutable_dictionary(Dictionary::load_file(path)); },
            py::arg("path"))
        .def_static(
            "parse",
            [](const std::string& text) { return mutable_dictionary(Dictionary::parse(text)); },
            py::arg("text"))
        .def_static(
            "load_installed", [] { return mutable_dictionary(Dictionary::load_installed()); },
            "The dictionary installed with libmdcast or $MDCAST_DICTIONARY; None if neither.")
        .def("id", [](const Dictionary& d, const std::string& name) { return d.id(name); })
        .def("name",
             [](const Dictionary& d, uint32_t id) -> py::object {
                 const auto n = d.name(id);
                 if (n.empty()) return py::none();
                 return py::str(n.data(), n.size());
             })
        .def("kind",
             [](const Dictionary& d, uint32_t id) -> py::object {
                 const auto k = d.kind(id);
                 if (!k) return py::none();
                 return py::str(kind_name(*k));
             })
        .def("__len__", &Dictionary::size)
        .def("__contains__",
             [](const Dictionary& d, const std::string& name) { return d.id(name).has_value(); });
}

// ConnectionOptions' fields, on ConsumerOptions and PublisherOptions alike.
template <typename Class>
void bind_connection_options(Class& c) {
    using O = typename Class::type;
    c.def_readwrite("user", &O::user)
        .def_readwrite("application_id", &O::application_id)
        .def_readwrite("position", &O::position)
        .def_readwrite("password", &O::password)
        .def_readwrite("connect_timeout_ms", &O::connect_timeout_ms)
        .def_readwrite("login_timeout_ms", &O::login_timeout_ms)
        .def_readwrite("heartbeat_interval_ms", &O::heartbeat_interval_ms)
        .def_readwrite("heartbeat_timeout_ms", &O::heartbeat_timeout_ms)
        .def_readwrite("reconnect_delay_min_ms", &O::reconnect_delay_min_ms)
        .def_readwrite("reconnect_delay_max_ms", &O::reconnect_delay_max_ms)
        .def_readwrite("reconnect_jitter", &O::reconnect_jitter)
        .def_readwrite("log_level", &O::log_level)
        .def_readwrite("tls", &O::tls);
}

std::vector<std::string> addresses(const std::vector<ServerAddress>& servers) {
    std::vector<std::string> out;
    for (const ServerAddress& s : servers) out.push_back(s.to_string());
    return out;
}

std::vector<ServerAddress> parse_addresses(const std::vector<std::string>& list) {
    std::string joined;
    for (const std::string& s : list) joined += (joined.empty() ? "" : ",") + s;
    return parse_server_list(joined);
}

void bind_options(py::module_& m) {
    py::class_<TlsOptions>(m, "TlsOptions")
        .def(py::init<>())
        .def_readwrite("enabled", &TlsOptions::enabled)
        .def_readwrite("ca_file", &TlsOptions::ca_file)
        .def_readwrite("cert_file", &TlsOptions::cert_file)
        .def_readwrite("key_file", &TlsOptions::key_file)
        .def_readwrite("server_name", &TlsOptions::server_name)
        .def_readwrite("min_version", &TlsOptions::min_version)
        .def_readwrite("insecure_skip_verify", &TlsOptions::insecure_skip_verify);

    py::class_<ConsumerOptions> consumer(m, "ConsumerOptions");
    consumer.def(py::init<>());
    bind_connection_options(consumer);
    consumer.def_readwrite("catch_up_timeout_ms", &ConsumerOptions::catch_up_timeout_ms)
        .def_readwrite("busy_poll_us", &ConsumerOptions::busy_poll_us)
        .def_readwrite("max_frame_bytes", &ConsumerOptions::max_frame_bytes)
        .def_property(
            "servers", [](const ConsumerOptions& o) { return addresses(o.servers); },
            [](ConsumerOptions& o, const std::vector<std::string>& s) {
                o.servers = parse_addresses(s);
            })
        .def_property(
            "dictionary", [](const ConsumerOptions& o) { return mutable_dictionary(o.dictionary); },
            [](ConsumerOptions& o, std::shared_ptr<Dictionary> d) { o.dictionary = std::move(d); });

    py::class_<PublisherOptions> publisher(m, "PublisherOptions");
    publisher.def(py::init<>());
    bind_connection_options(publisher);
    publisher.def_readwrite("max_queued_bytes", &PublisherOptions::max_queued_bytes)
        .def_readwrite("takeover_secret", &PublisherOptions::takeover_secret)
        .def_readwrite("standby_rank", &PublisherOptions::standby_rank)
        .def_readwrite("publish_to_all", &PublisherOptions::publish_to_all)
        .def_property(
            "distributors", [](const PublisherOptions& o) { return addresses(o.distributors); },
            [](PublisherOptions& o, const std::vector<std::string>& s) {
                o.distributors = parse_addresses(s);
            });
}

}  // namespace

void bind_types(py::module_& m) {
    bind_status_code(m);
    bind_dictionary(m);
    bind_options(m);
    m.def("realtime_now_ns", &realtime_now_ns,
          "CLOCK_REALTIME in ns, the clock updates are stamped with.");
    m.def(
        "_set_sched_slice",
        [](uint32_t slice_us) {
            std::string why;
            return mdcast::set_sched_slice(slice_us, &why) ? std::string() : why;
        },
        py::arg("slice_us"), "mdcast::set_sched_slice; returns why it was not applied, or ''.");
}

}  // namespace mdcast::python

PYBIND11_MODULE(_mdcast, m) {
    m.doc() = "The C++ core of the mdcast package (libmdcast bindings); use `import mdcast`.";
    mdcast::python::bind_types(m);
    mdcast::python::bind_events(m);
    mdcast::python::bind_consumer(m);
    mdcast::python::bind_publisher(m);
    mdcast::python::bind_logging(m);
}
