// mdcast::set_sched_slice — the scheduler time slice of the calling thread and
// of every thread it starts afterwards (Linux 6.12 or later, EEVDF).
//
// Under EEVDF a thread with a shorter slice than the one running on its core
// preempts it when it wakes, instead of waiting up to that thread's slice
// (1.4 ms by default on 2 CPUs). An application whose Consumers' I/O threads
// share a core with a busy thread (a publisher, a strategy) gets a shorter
// latency tail from a short slice (100 µs) for the same CPU: the thread asks
// for the CPU sooner, not for more of it. No privilege is needed.
//
//   std::string why;
//   if (!mdcast::set_sched_slice(100, &why)) log("no short slice: " + why);
//   mdcast::Consumer consumer(options, handler);  // its I/O thread inherits the slice
//
// Call it before creating the Consumers, Publishers and IoContexts whose
// threads should have the slice (threads inherit it when they start), from
// the application thread that should have it too. docs/sdk.md has figures.
#pragma once

#include <cstdint>
#include <string>

#include "mdcast/export.h"

namespace mdcast {

// `slice_us`: 100..100000, or 0 for the kernel's default. False (with the
// reason in `*error` when given) when it is out of range, or the kernel
// refuses or ignores it (before 6.12 the call succeeds without effect: the
// slice read back is checked); the thread keeps its slice then.
MDCAST_API bool set_sched_slice(uint32_t slice_us, std::string* error = nullptr);

}  // namespace mdcast
