// Tests for mdcast::set_sched_slice (client-sdk/include/mdcast/scheduling.h,
// over common/scheduling.h, which the daemons' process.sched_slice_us uses):
// the slice is applied and read back, inherited by threads started after it,
// refused out of range, and reset by 0. Each case runs on a thread of its own
// so the test runner's thread keeps the default. On a kernel without custom
// slices (before Linux 6.12) only the refusals are checked.
#include "mdcast/scheduling.h"

#include <catch2/catch.hpp>
#include <string>
#include <thread>

#include "common/scheduling.h"

namespace {

// Runs `body` on a new thread and waits for it.
template <class Body>
void on_thread(Body body) {
    std::thread thread(body);
    thread.join();
}

bool kernel_has_custom_slices() {
    bool has = false;
    on_thread([&] {
        std::string why;
        has = mdcast::set_sched_slice(300, &why);
        if (!has) WARN("no custom slices here: " << why);
    });
    return has;
}

}  // namespace

TEST_CASE("a slice out of the kernel's range is refused and changes nothing", "[scheduling]") {
    on_thread([] {
        const uint32_t before = mdcast::sched_slice_us();
        for (const uint32_t slice : {1u, 99u, 100'001u}) {
            std::string why;
            CHECK_FALSE(mdcast::set_sched_slice(slice, &why));
            CHECK(why.find(std::to_string(slice)) != std::string::npos);
            CHECK(mdcast::sched_slice_us() == before);
        }
    });
}

TEST_CASE("the slice is applied, inherited by new threads, and reset by 0", "[scheduling]") {
    if (!kernel_has_custom_slices()) return;
    on_thread([] {
        const uint32_t kernel_default = mdcast::sched_slice_us();
        std::string why;
        REQUIRE(mdcast::set_sched_slice(250, &why));
        CHECK(mdcast::sched_slice_us() == 250);
        uint32_t child = 0;
        on_thread([&] { child = mdcast::sched_slice_us(); });
        CHECK(child == 250);
        REQUIRE(mdcast::set_sched_slice(0, &why));
        CHECK(mdcast::sched_slice_us() == kernel_default);
        CHECK(mdcast::set_sched_slice(100'000));  // the longest, without an error string
        CHECK(mdcast::sched_slice_us() == 100'000);
    });
}
