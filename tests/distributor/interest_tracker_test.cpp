// Tests for distributor/interest_tracker.h: one request to the source however
// many servers ask, a retry after the interval, and asking again for every
// wanted item when the source comes back.
#include "distributor/interest_tracker.h"

#include <algorithm>
#include <catch2/catch.hpp>

namespace {
using mdcast::distributor::InterestTracker;
constexpr int64_t kMs = 1'000'000;
}  // namespace

TEST_CASE("many asks for one item make one request per retry interval", "[interest_tracker]") {
    InterestTracker tracker(1000 * kMs);
    CHECK(tracker.should_request(7, 1, 0));
    CHECK_FALSE(tracker.should_request(7, 1, 10 * kMs));   // a second server
    CHECK_FALSE(tracker.should_request(7, 1, 999 * kMs));  // the first server retrying
    CHECK(tracker.should_request(7, 1, 1000 * kMs));       // no answer in time: ask again
    CHECK_FALSE(tracker.should_request(7, 1, 1500 * kMs));
    CHECK(tracker.should_request(8, 1, 1500 * kMs));  // another item is its own
    CHECK(tracker.size() == 2);
}

TEST_CASE("a source coming back is asked for every item wanted in its service",
          "[interest_tracker]") {
    InterestTracker tracker(1000 * kMs);
    tracker.should_request(1, 10, 0);
    tracker.should_request(2, 10, 0);
    tracker.should_request(3, 20, 0);
    auto wanted = tracker.rerequest_service(10, 50 * kMs);
    std::sort(wanted.begin(), wanted.end());
    CHECK(wanted == std::vector<uint64_t>{1, 2});
    CHECK(tracker.rerequest_service(30, 50 * kMs).empty());
    // The re-request counts as the last ask.
    CHECK_FALSE(tracker.should_request(1, 10, 500 * kMs));
    CHECK(tracker.should_request(1, 10, 1050 * kMs));
}
