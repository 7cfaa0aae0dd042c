// --sched-slice-us for the bench's SDK programs (mdcast-bench-publisher,
// mdcast-bench-consumer): mdcast::set_sched_slice on the main thread before
// any SDK object exists, so the publishing thread and every I/O thread run
// with it, as an application would do (docs/sdk.md).
#pragma once

#include <cstdint>
#include <iostream>
#include <string>

#include "common/config/command_line.h"
#include "mdcast/scheduling.h"

namespace mdcast::tools {

inline cli::CommandLine& add_sched_slice_option(cli::CommandLine& command_line, int64_t& slice_us) {
    return command_line.option(
        "sched-slice-us", &slice_us, "MICROS",
        "Scheduler slice of every thread (mdcast::set_sched_slice, Linux 6.12+; 0: the "
        "kernel's default)",
        0, 100'000);
}

// False, after saying why on stderr, when the slice asked for is not applied.
inline bool apply_sched_slice_option(const char* program, int64_t slice_us) {
    if (slice_us == 0) return true;
    std::string why;
    if (mdcast::set_sched_slice(static_cast<uint32_t>(slice_us), &why)) return true;
    std::cerr << program << ": error: --sched-slice-us " << slice_us << ": " << why << "\n";
    return false;
}

}  // namespace mdcast::tools
