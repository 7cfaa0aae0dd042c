// _mdcast's side of SDK logging: routes libmdcast's lines into a LogQueue that
// mdcast/_logging.py drains into Python's `logging` (see log_queue.h for why
// the lines are queued rather than handed to Python on the logging thread).
#include <pybind11/stl.h>

#include <memory>

#include "bindings.h"
#include "log_queue.h"
#include "without_gil.h"

namespace mdcast::python {

namespace {

// Never destroyed: the SDK's handler may still push from an I/O thread while
// the process exits, after Python has gone.
LogQueue& log_queue() {
    static auto* queue = new LogQueue();
    return *queue;
}

py::list take_log_lines(double timeout_s) {
    const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
    auto lines = without_gil([&] { return log_queue().take(timeout); });
    py::list out;
    for (auto& [level, text] : lines) {
        out.append(
            py::make_tuple(to_string(level), py::bytes(text).attr("decode")("utf-8", "replace")));
    }
    return out;
}

}  // namespace

void bind_logging(py::module_& m) {
    m.def(
        "route_log_to_queue",
        [] {
            without_gil([] {
                set_log_handler(
                    [](LogLevel level, std::string_view text) { log_queue().push(level, text); });
            });
        },
        "From now on libmdcast's log lines wait in a queue for take_log_lines().");
    m.def(
        "route_log_to_stderr", [] { without_gil([] { set_log_handler(nullptr); }); },
        "libmdcast's log lines go to stderr again.");
    m.def("take_log_lines", &take_log_lines, py::arg("timeout"),
          "[(level, line)] waiting, after waiting up to timeout s for the first (GIL released).");
    m.def(
        "take_log_dropped", [] { return log_queue().take_dropped(); },
        "Lines dropped because the queue was full, since the last call.");
}

}  // namespace mdcast::python
