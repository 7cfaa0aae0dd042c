#include "common/scheduling.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mdcast {

namespace {

// struct sched_attr of sched_setattr(2); glibc 2.36 has no wrapper.
struct SchedAttr {
    uint32_t size = sizeof(SchedAttr);
    uint32_t policy = 0;
    uint64_t flags = 0;
    int32_t nice = 0;
    uint32_t priority = 0;
    uint64_t runtime_ns = 0;  // SCHED_OTHER, Linux 6.12+: the custom slice
    uint64_t deadline_ns = 0;
    uint64_t period_ns = 0;
    uint32_t util_min = 0;
    uint32_t util_max = 0;
};

bool get_attr(SchedAttr& attr) {
    return syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) == 0;
}

}  // namespace

uint32_t sched_slice_us() {
    SchedAttr attr;
    if (!get_attr(attr) || attr.policy != SCHED_OTHER) return 0;
    return static_cast<uint32_t>(attr.runtime_ns / 1000);
}

std::string sched_slice_problem(uint32_t slice_us) {
    if (slice_us == 0 || (slice_us >= kMinSchedSliceUs && slice_us <= kMaxSchedSliceUs)) return {};
    return "a scheduler slice is 0 (the kernel's default) or " + std::to_string(kMinSchedSliceUs) +
           ".." + std::to_string(kMaxSchedSliceUs) + " µs, not " + std::to_string(slice_us);
}

bool apply_sched_slice(uint32_t slice_us, std::string& error) {
    error = sched_slice_problem(slice_us);
    if (!error.empty()) return false;
    SchedAttr attr;
    if (!get_attr(attr)) {
        error = std::string("sched_getattr: ") + std::strerror(errno);
        return false;
    }
    if (attr.policy != SCHED_OTHER) {
        error = "the thread is not under the normal (fair) scheduling class";
        return false;
    }
    // The nice value read above goes back unchanged (SCHED_FLAG_KEEP_PARAMS
    // would also keep the old slice).
    attr.size = sizeof attr;
    attr.flags = 0;
    attr.runtime_ns = uint64_t{slice_us} * 1000;
    if (syscall(SYS_sched_setattr, 0, &attr, 0) != 0) {
        error = std::string("sched_setattr: ") + std::strerror(errno);
        return false;
    }
    if (slice_us != 0 && sched_slice_us() != slice_us) {
        error = "the kernel ignores custom slices (Linux 6.12 or later has them)";
        return false;
    }
    return true;
}

}  // namespace mdcast
