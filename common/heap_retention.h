// How much freed memory the process keeps rather than hand back to the kernel.
//
// A daemon's output queues (libevent's evbuffer chains, at most 4 KiB each)
// fill during a loop iteration or a timed-writes interval and empty when it is
// written. glibc gives the freed top of its heap back to the kernel as soon as
// it passes M_TRIM_THRESHOLD (128 KiB by default), so the next interval takes
// every page again through a page fault: at a million updates a second
// through a cascade link the edge took 16,000 page faults a second and the hub
// 15,000, a fifth of their CPU. Keeping the freed top up to a bound makes those
// pages stay mapped; the bound is what the process may hold beyond its peak
// use, never more.
#pragma once

#include <cstddef>

namespace mdcast {

// Freed heap both daemons keep mapped (their peak output is their queues'
// configured limits; this only stops it from being unmapped and faulted in
// again at every flush).
constexpr size_t kRetainedHeapBytes = 64u << 20;

// Keeps up to `bytes` of freed memory at the top of the heap mapped
// (M_TRIM_THRESHOLD; glibc's own adjustment of it and of M_MMAP_THRESHOLD
// stops: allocations of 128 KiB and more stay mmap()ed). Call before any
// thread starts. False when the allocator refuses.
bool retain_freed_heap(size_t bytes);

}  // namespace mdcast
