// without_gil(work): runs `work` with the GIL released and takes the GIL back
// in a plain function body, not in a destructor.
//
// Why not py::gil_scoped_release: a daemon thread that takes the GIL back
// while the interpreter is finalizing is ended by CPython with pthread_exit,
// which unwinds the thread's stack. Unwinding out of a destructor, which is
// noexcept, calls std::terminate: "terminate called without an active
// exception" and SIGABRT, the abort seen when a program ended while its
// Consumer's callback thread was returning from take(). Here the unwind
// passes through ordinary frames (pybind11's dispatcher lets it through) and
// the thread ends quietly, as Python's own daemon threads do.
#pragma once

#include <Python.h>

#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

namespace mdcast::python {

// `work` must not touch Python objects. Exceptions it throws are rethrown
// once the GIL is held again.
template <class Work>
auto without_gil(Work&& work) -> std::invoke_result_t<Work> {
    using Result = std::invoke_result_t<Work>;
    PyThreadState* const state = PyEval_SaveThread();
    std::exception_ptr error;
    if constexpr (std::is_void_v<Result>) {
        try {
            work();
        } catch (...) {
            error = std::current_exception();
        }
        PyEval_RestoreThread(state);  // may end this thread while the interpreter finalizes
        if (error) std::rethrow_exception(error);
    } else {
        std::optional<Result> result;
        try {
            result.emplace(work());
        } catch (...) {
            error = std::current_exception();
        }
        PyEval_RestoreThread(state);  // may end this thread while the interpreter finalizes
        if (error) std::rethrow_exception(error);
        return std::move(*result);
    }
}

}  // namespace mdcast::python
