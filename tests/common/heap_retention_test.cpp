// retain_freed_heap: output-queue-like churn (4 KiB chunks, all freed at once)
// leaves the heap mapped up to the bound, and is handed back beyond it.
#include "common/heap_retention.h"

#include <malloc.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

namespace {

constexpr size_t kChunkBytes = 4000;  // an evbuffer chain's size class
constexpr size_t kChunks = 2048;      // 8 MB

// The main arena's size once `kChunks` chunks were taken, and after they were all freed.
std::pair<size_t, size_t> churn() {
    std::vector<void*> chunks;
    chunks.reserve(kChunks);
    for (size_t i = 0; i < kChunks; ++i) {
        chunks.push_back(std::malloc(kChunkBytes));
        std::memset(chunks.back(), 1, kChunkBytes);
    }
    const size_t full = mallinfo2().arena;
    for (auto it = chunks.rbegin(); it != chunks.rend(); ++it) std::free(*it);
    return {full, mallinfo2().arena};
}

}  // namespace

TEST_CASE("freed heap within the bound stays mapped", "[heap_retention]") {
    REQUIRE(mdcast::retain_freed_heap(64u << 20));
    const auto [full, after] = churn();
    CHECK(after + (1u << 20) >= full);
}

TEST_CASE("freed heap beyond the bound goes back to the kernel", "[heap_retention]") {
    REQUIRE(mdcast::retain_freed_heap(1u << 20));
    const auto [full, after] = churn();
    CHECK(after + (4u << 20) <= full);
}
