// The calling thread's scheduler time slice (Linux 6.12+, EEVDF).
//
// Under EEVDF a task's slice sets how far ahead its deadline lies: a task
// with a shorter slice than the one running on its core preempts it when it
// wakes, instead of waiting up to the running task's slice (1.4 ms by
// default on a 2-CPU machine). A market-data daemon or I/O thread that wakes
// for every few updates and runs for microseconds gains latency from a short
// slice and costs nobody much: it asks for the CPU sooner, not for more of
// it. No privilege is needed. Threads and processes started afterwards
// inherit the slice, so set it before starting them.
#pragma once

#include <cstdint>
#include <string>

namespace mdcast {

// The kernel bounds a custom slice to this range.
constexpr uint32_t kMinSchedSliceUs = 100;
constexpr uint32_t kMaxSchedSliceUs = 100'000;

// Why `slice_us` is not a slice the kernel takes; empty when it is (0: its
// default, or kMinSchedSliceUs..kMaxSchedSliceUs).
std::string sched_slice_problem(uint32_t slice_us);

// Sets the calling thread's slice to `slice_us` (0: back to the kernel's
// default). False, with `error` saying why, when the kernel refuses or
// ignores it (kernels before 6.12 accept the call and ignore the slice: the
// slice read back is checked) or `slice_us` is outside the range above.
bool apply_sched_slice(uint32_t slice_us, std::string& error);

// The calling thread's slice in µs as the kernel reports it (its default
// when none was set); 0 when it reports none (before Linux 6.12, or a thread
// not under the fair class).
uint32_t sched_slice_us();

}  // namespace mdcast
