// ConsumerBridge for Python: options, requests, and take() with the GIL released.
#include <pybind11/chrono.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>

#include "bindings.h"
#include "consumer_bridge.h"
#include "without_gil.h"

namespace mdcast::python {
namespace {

// None, or a list of field names and/or ids.
View make_view(const py::object& fields) {
    View view;
    if (fields.is_none()) return view;
    if (py::isinstance<py::str>(fields))
        throw py::type_error("view: a list of field names, not a str");
    for (py::handle f : fields) {
        if (py::isinstance<py::str>(f)) {
            view.field_names.push_back(f.cast<std::string>());
        } else {
            view.field_ids.push_back(f.cast<uint32_t>());
        }
    }
    return view;
}

std::chrono::milliseconds to_ms(double seconds) {
    if (!(seconds >= 0)) throw py::value_error("timeout must be >= 0 seconds");
    return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(seconds * 1000)));
}

std::vector<uint64_t> ids(const std::vector<ItemHandle>& handles) {
    std::vector<uint64_t> out;
    out.reserve(handles.size());
    for (const ItemHandle& h : handles) out.push_back(h.id);
    return out;
}

py::dict stats_dict(const ConsumerBridge& core) {
    const ConsumerStats s = core.stats();
    py::dict d;
    d["refreshes"] = s.refreshes;
    d["updates"] = s.updates;
    d["statuses"] = s.statuses;
    d["group_statuses"] = s.group_statuses;
    d["duplicates_dropped"] = s.duplicates_dropped;
    d["catch_ups"] = s.catch_ups;
    d["connections"] = s.connections;
    d["connection_losses"] = s.connection_losses;
    d["posts_sent"] = s.posts_sent;
    d["posts_accepted"] = s.posts_accepted;
    return d;
}

// A post's answer to come: wait() with the GIL released, then result().
void bind_pending_post(py::module_& m) {
    using Pending = std::shared_future<PostResult>;
    py::class_<Pending>(m, "PendingPost", "The answer to one post, once it comes.")
        .def(
            "wait",
            [](const Pending& p, double timeout) {
                const auto ms = to_ms(timeout);
                return without_gil([&] { return p.wait_for(ms) == std::future_status::ready; });
            },
            py::arg("timeout"), "True once the answer is in (waits up to `timeout` s).")
        .def("result", [](const Pending& p) {
            without_gil([&] { p.wait(); });
            const PostResult& r = p.get();
            return py::make_tuple(r.post_id, r.accepted, r.code, r.text);
        });
}

}  // namespace

void bind_consumer(py::module_& m) {
    bind_pending_post(m);
    using Core = ConsumerBridge;
    py::class_<Core>(m, "ConsumerCore", "The C++ consumer under mdcast.Consumer.")
        .def(py::init<ConsumerOptions, size_t>(), py::arg("options"), py::arg("max_queued_events"))
        .def("start", [](Core& c) { without_gil([&] { c.start(); }); })
        .def("stop", [](Core& c) { without_gil([&] { c.stop(); }); })
        .def(
            "subscribe",
            [](Core& c, const std::string& service, const std::string& item, const py::object& view,
               uint32_t conflate_ms) {
                return c.subscribe(service, item, make_view(view), conflate_ms).id;
            },
            py::arg("service"), py::arg("item"), py::arg("view") = py::none(),
            py::arg("conflate_ms") = 0)
        .def(
            "subscribe_batch",
            [](Core& c, const std::string& service, const std::vector<std::string>& items,
               const py::object& view, uint32_t conflate_ms) {
                return ids(c.subscribe_batch(service, items, make_view(view), conflate_ms));
            },
            py::arg("service"), py::arg("items"), py::arg("view") = py::none(),
            py::arg("conflate_ms") = 0)
        .def(
            "snapshot",
            [](Core& c, const std::string& service, const std::string& item,
               const py::object& view) { return c.snapshot(service, item, make_view(view)).id; },
            py::arg("service"), py::arg("item"), py::arg("view") = py::none())
        .def(
            "snapshot_batch",
            [](Core& c, const std::string& service, const std::vector<std::string>& items,
               const py::object& view) {
                return ids(c.snapshot_batch(service, items, make_view(view)));
            },
            py::arg("service"), py::arg("items"), py::arg("view") = py::none())
        .def(
            "unsubscribe",
            [](Core& c, uint64_t handle) { without_gil([&] { c.unsubscribe(handle); }); },
            py::arg("handle"))
        .def("request_directory", &Core::request_directory)
        .def("post", &Core::post, py::arg("handle"), py::arg("fields"))
        .def("post_to", &Core::post_to, py::arg("service"), py::arg("item"), py::arg("fields"))
        .def(
            "take",
            [](Core& c, double timeout) {
                const auto ms = to_ms(timeout);
                return without_gil([&] { return c.channel().take(ms); });
            },
            py::arg("timeout"),
            "Everything waiting, after waiting up to `timeout` s for the first.")
        .def("fileno", [](Core& c) { return c.channel().fd(); })
        .def_property_readonly("closed", [](Core& c) { return c.channel().closed(); })
        .def_property_readonly("waiting", [](Core& c) { return c.channel().waiting(); })
        .def_property_readonly("full_waits", [](Core& c) { return c.channel().full_waits(); })
        .def("stats", &stats_dict)
        .def(
            "wait_connected",
            [](Core& c, double timeout) {
                const auto ms = to_ms(timeout);
                const ConnectionSnapshot s = without_gil([&] { return c.wait_connected(ms); });
                return py::make_tuple(std::string(connection_state_name(s.state)), s.server,
                                      s.text);
            },
            py::arg("timeout"));
}

}  // namespace mdcast::python
