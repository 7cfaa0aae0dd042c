#include "common/clock.h"

#include <ctime>

namespace mdcast {

namespace {
int64_t read_clock(clockid_t id) {
    timespec ts;
    clock_gettime(id, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace

int64_t realtime_ns() {
    return read_clock(CLOCK_REALTIME);
}
int64_t monotonic_ns() {
    return read_clock(CLOCK_MONOTONIC);
}

}  // namespace mdcast
