#include "common/heap_retention.h"

#include <malloc.h>

#include <climits>

namespace mdcast {

bool retain_freed_heap(size_t bytes) {
    const int value = bytes > static_cast<size_t>(INT_MAX) ? INT_MAX : static_cast<int>(bytes);
    return mallopt(M_TRIM_THRESHOLD, value) == 1;
}

}  // namespace mdcast
