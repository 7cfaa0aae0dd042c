// mdcast-linkshim: joins two network interfaces at layer 2 (every frame read on one
// is sent out of the other) and shapes each direction with a LinkSchedule: delay,
// rate limit with a bounded queue, random loss, and a cut switched at run time.
// Made for tests in network namespaces, where the kernel has no netem.
#pragma once

#include <cstdint>
#include <string>

#include "link_schedule.h"

namespace mdcast::linkshim {

struct ShimOptions {
    std::string side_a;  // interface names
    std::string side_b;
    LinkShape a_to_b;
    LinkShape b_to_a;
    double seconds = 3600;  // run time limit
    uint64_t seed = 1;      // of the random loss (each direction its own stream)
    bool start_cut = false;
};

// Runs until SIGTERM/SIGINT or `seconds`, then prints the counters of each direction
// on stderr. SIGUSR1 cuts both directions, SIGUSR2 restores them. Returns the exit
// code (1 when an interface cannot be opened, said on stderr).
int run_shim(const ShimOptions& options);

}  // namespace mdcast::linkshim
