// The parts of the _mdcast extension module, each defined in its own file.
#pragma once

#include <pybind11/pybind11.h>

namespace mdcast::python {

namespace py = pybind11;

void bind_types(py::module_& m);      // module.cpp: enums, Dictionary, options
void bind_events(py::module_& m);     // event_bindings.cpp: Event, Batch, Service
void bind_consumer(py::module_& m);   // consumer_bindings.cpp: ConsumerCore
void bind_publisher(py::module_& m);  // publisher_bindings.cpp: PublisherCore
void bind_logging(py::module_& m);    // log_bindings.cpp: SDK log lines to Python

}  // namespace mdcast::python
