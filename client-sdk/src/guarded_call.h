// Application callbacks must not unwind through the event loop. A thread being
// ended (pthread_exit: CPython ends a thread that asks for the GIL while the
// interpreter finalizes) must unwind, though: swallowing that aborts the process.
#pragma once

#include <cxxabi.h>

#include <exception>

#include "common/logging.h"

namespace mdcast::sdk {

// Calls `call`; what it throws (but a thread's forced unwind) is logged as the
// publisher handler's `what` and swallowed.
template <class Call>
void guarded(spdlog::logger& log, const char* what, Call&& call) {
    try {
        call();
    } catch (abi::__forced_unwind&) {
        throw;
    } catch (const std::exception& e) {
        log.error("publisher handler threw in {}: {}", what, e.what());
    } catch (...) {
        log.error("publisher handler threw in {}", what);
    }
}

}  // namespace mdcast::sdk
