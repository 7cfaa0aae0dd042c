// PublisherBridge for Python.
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <optional>

#include "bindings.h"
#include "book_values.h"
#include "publisher_bridge.h"
#include "without_gil.h"

namespace mdcast::python {
namespace {

StreamState parse_stream(const std::string& s) {
    if (s == "open") return StreamState::kOpen;
    if (s == "closed") return StreamState::kClosed;
    throw py::value_error("stream must be 'open' or 'closed', not '" + s + "'");
}

DataState parse_data(const std::string& s) {
    if (s == "ok") return DataState::kOk;
    if (s == "suspect") return DataState::kSuspect;
    throw py::value_error("data must be 'ok' or 'suspect', not '" + s + "'");
}

ItemState make_state(const std::string& stream, const std::string& data, StatusCode code,
                     const std::string& text) {
    return ItemState{parse_stream(stream), parse_data(data), code, text};
}

py::dict stats_dict(const PublisherBridge& p) {
    const PublisherStats s = p.stats();
    py::dict d;
    d["refreshes_sent"] = s.refreshes_sent;
    d["updates_sent"] = s.updates_sent;
    d["statuses_sent"] = s.statuses_sent;
    d["updates_held"] = s.updates_held;
    d["updates_dropped"] = s.updates_dropped;
    d["outbox_full"] = s.outbox_full;
    d["item_requests"] = s.item_requests;
    d["item_closes"] = s.item_closes;
    d["rejections"] = s.rejections;
    d["connections"] = s.connections;
    d["connection_losses"] = s.connection_losses;
    d["caller_writes"] = s.caller_writes;
    d["posts_received"] = s.posts_received;
    d["posts_accepted"] = s.posts_accepted;
    d["links_dropped"] = s.links_dropped;
    d["frames_refused"] = s.frames_refused;
    d["images_dropped"] = s.images_dropped;
    return d;
}

}  // namespace

void bind_publisher(py::module_& m) {
    using P = PublisherBridge;
    using Holder = std::unique_ptr<P, PublisherBridgeDeleter>;
    py::class_<P, Holder>(m, "PublisherCore", "The C++ publisher under mdcast.Publisher.")
        .def(py::init([](PublisherOptions options, std::shared_ptr<Dictionary> dictionary,
                         py::object callback) {
                 return Holder(
                     new P(std::move(options), std::move(dictionary), std::move(callback)));
             }),
             py::arg("options"), py::arg("dictionary"), py::arg("callback"))
        .def("start", [](P& p) { without_gil([&] { p.start(); }); })
        .def("stop", [](P& p) { without_gil([&] { p.stop(); }); })
        .def("add_service", &P::add_service, py::arg("name"), py::arg("interactive") = false)
        .def("add_item", &P::add_item, py::arg("service"), py::arg("item"))
        .def(
            "refresh",
            [](P& p, uint64_t item, const py::dict& fields, const std::string& stream,
               const std::string& data, StatusCode code, const std::string& text) {
                return p.refresh(item, fields, make_state(stream, data, code, text));
            },
            py::arg("item"), py::arg("fields"), py::arg("stream") = "open", py::arg("data") = "ok",
            py::arg("code") = StatusCode::kNone, py::arg("text") = "")
        .def(
            "update",
            [](P& p, uint64_t item, const py::dict& fields, std::optional<uint64_t> publish_time_ns,
               bool trade) {
                return p.update(item, fields, publish_time_ns.value_or(Publisher::kStampNow),
                                trade);
            },
            py::arg("item"), py::arg("fields"), py::arg("publish_time_ns") = py::none(),
            py::arg("trade") = false)
        .def(
            "refresh_book",
            [](P& p, uint64_t item, const std::string& domain, const py::dict& summary,
               py::object entries, const std::string& stream, const std::string& data,
               StatusCode code, const std::string& text) {
                return p.refresh_book(item, parse_domain(domain), summary, entries,
                                      make_state(stream, data, code, text));
            },
            py::arg("item"), py::arg("domain"), py::arg("summary"), py::arg("entries"),
            py::arg("stream") = "open", py::arg("data") = "ok", py::arg("code") = StatusCode::kNone,
            py::arg("text") = "")
        .def(
            "update_book",
            [](P& p, uint64_t item, const py::dict& summary, py::object changes,
               std::optional<uint64_t> publish_time_ns) {
                return p.update_book(item, summary, changes,
                                     publish_time_ns.value_or(Publisher::kStampNow));
            },
            py::arg("item"), py::arg("summary"), py::arg("changes"),
            py::arg("publish_time_ns") = py::none())
        .def(
            "status",
            [](P& p, uint64_t item, const std::string& stream, const std::string& data,
               StatusCode code, const std::string& text) {
                return p.status(item, make_state(stream, data, code, text));
            },
            py::arg("item"), py::arg("stream") = "open", py::arg("data") = "ok",
            py::arg("code") = StatusCode::kNone, py::arg("text") = "")
        .def(
            "flush",
            [](P& p, double timeout) {
                if (!(timeout >= 0)) throw py::value_error("timeout must be >= 0 seconds");
                const auto ms =
                    std::chrono::milliseconds(static_cast<int64_t>(std::ceil(timeout * 1000)));
                return without_gil([&] { return p.flush(ms); });
            },
            py::arg("timeout"))
        .def("stats", &stats_dict);
}

}  // namespace mdcast::python
