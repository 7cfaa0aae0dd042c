#include "mdcast/scheduling.h"

#include "common/scheduling.h"

namespace mdcast {

bool set_sched_slice(uint32_t slice_us, std::string* error) {
    std::string why;
    const bool applied = apply_sched_slice(slice_us, why);
    if (!applied && error) *error = why;
    return applied;
}

}  // namespace mdcast
