// retired_images.h: a switched standby's images are freed after the switch, in
// slices on later loop passes, never in the pass that retired them.
#include "distributor/retired_images.h"

#include <catch2/catch.hpp>
#include <vector>

using namespace mdcast;
using namespace mdcast::distributor;
using std::chrono::microseconds;

namespace {

RetiredImages::Items items(size_t count) {
    RetiredImages::Items out;
    for (size_t i = 0; i < count; ++i) {
        StandbyItem& item = out[i + 1];
        item.has_image = true;
        item.status_text = "standby image " + std::to_string(i);
    }
    return out;
}

}  // namespace

TEST_CASE("retired images are freed in slices after the pass that retired them",
          "[retired_images]") {
    EventLoop loop;
    RetiredImages retired(loop, 1000, microseconds(1000));
    auto first = items(2500);
    auto second = items(700);
    retired.retire(first);
    retired.retire(second);
    CHECK(first.empty());
    CHECK(second.empty());
    CHECK(retired.waiting() == 3200);  // nothing freed in this pass

    // Slices run at >= 1 ms, then 1 ms after each slice ran: at 1.5 ms one has run.
    std::vector<size_t> seen;
    Timer probe(loop, [&] { seen.push_back(retired.waiting()); });
    probe.start_once(microseconds(1500));
    Timer done(loop, [&] {
        if (retired.waiting() == 0) loop.stop();
    });
    done.start_periodic(microseconds(500));
    Timer give_up(loop, [&] { loop.stop(); });
    give_up.start_once(std::chrono::seconds(10));
    loop.run();
    REQUIRE(seen.size() == 1);
    CHECK(seen[0] == 2200);
    CHECK(retired.waiting() == 0);
}

TEST_CASE("retiring nothing arms nothing", "[retired_images]") {
    EventLoop loop;
    RetiredImages retired(loop);
    RetiredImages::Items none;
    retired.retire(none);
    CHECK(retired.waiting() == 0);
}
