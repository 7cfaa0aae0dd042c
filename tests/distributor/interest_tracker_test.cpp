// Tests for distributor/interest_tracker.h: one request to the source however
// many servers ask, a retry after the interval, asking again for every wanted
// item when the source comes back; interest counted per item per server, ended
// by a release or an expired lease, and the item dropped only after the hold.
#include "distributor/interest_tracker.h"

#include <algorithm>
#include <catch2/catch.hpp>

namespace {
using mdcast::distributor::InterestTracker;
constexpr int64_t kMs = 1'000'000;
constexpr uint64_t kServerA = 1, kServerB = 2;

InterestTracker tracker_with(int64_t retry_ms, int64_t lease_ms = 10'000, int64_t hold_ms = 500) {
    return InterestTracker({retry_ms * kMs, lease_ms * kMs, hold_ms * kMs});
}

std::vector<uint64_t> dropped_ids(InterestTracker& tracker, int64_t now_ns) {
    std::vector<uint64_t> ids;
    for (const auto& dropped : tracker.expire(now_ns)) ids.push_back(dropped.item_id);
    std::sort(ids.begin(), ids.end());
    return ids;
}
}  // namespace

TEST_CASE("many asks for one item make one request per retry interval", "[interest_tracker]") {
    auto tracker = tracker_with(1000);
    CHECK(tracker.should_request(7, 1, kServerA, 0));
    CHECK_FALSE(tracker.should_request(7, 1, kServerB, 10 * kMs));   // a second server
    CHECK_FALSE(tracker.should_request(7, 1, kServerA, 999 * kMs));  // the first server retrying
    CHECK(tracker.should_request(7, 1, kServerA, 1000 * kMs));       // no answer in time: ask again
    CHECK_FALSE(tracker.should_request(7, 1, kServerA, 1500 * kMs));
    CHECK(tracker.should_request(8, 1, kServerA, 1500 * kMs));  // another item is its own
    CHECK(tracker.size() == 2);
    CHECK(tracker.holders(7) == 2);
}

TEST_CASE("a source coming back is asked for every item wanted in its service",
          "[interest_tracker]") {
    auto tracker = tracker_with(1000);
    tracker.should_request(1, 10, kServerA, 0);
    tracker.should_request(2, 10, kServerA, 0);
    tracker.should_request(3, 20, kServerA, 0);
    auto wanted = tracker.rerequest_service(10, 50 * kMs);
    std::sort(wanted.begin(), wanted.end());
    CHECK(wanted == std::vector<uint64_t>{1, 2});
    CHECK(tracker.rerequest_service(30, 50 * kMs).empty());
    // The re-request counts as the last ask.
    CHECK_FALSE(tracker.should_request(1, 10, kServerA, 500 * kMs));
    CHECK(tracker.should_request(1, 10, kServerA, 1050 * kMs));
    // An item nobody wants any more (held, waiting to be dropped) is not asked for.
    tracker.release(2, kServerA, 1100 * kMs);
    CHECK(tracker.rerequest_service(10, 1200 * kMs) == std::vector<uint64_t>{1});
}

TEST_CASE("an item stays while any server holds it and is dropped after the hold",
          "[interest_tracker]") {
    auto tracker = tracker_with(1000, 10'000, 500);
    tracker.should_request(7, 1, kServerA, 0);
    CHECK(tracker.renew(7, 1, kServerB, 100 * kMs) == false);  // known: nothing to ask
    tracker.release(7, kServerA, 200 * kMs);
    CHECK(tracker.holders(7) == 1);
    CHECK(dropped_ids(tracker, 5000 * kMs).empty());  // B still wants it
    tracker.release(7, kServerB, 5000 * kMs);
    CHECK(tracker.holders(7) == 0);
    CHECK(dropped_ids(tracker, 5499 * kMs).empty());  // within the hold
    CHECK(dropped_ids(tracker, 5500 * kMs) == std::vector<uint64_t>{7});
    CHECK(tracker.size() == 0);
    CHECK(tracker.counters().releases == 2);
    CHECK(tracker.counters().items_dropped == 1);
    // Wanted again later: the source is asked afresh.
    CHECK(tracker.should_request(7, 1, kServerA, 6000 * kMs));
}

TEST_CASE("interest back within the hold keeps the item without a new request",
          "[interest_tracker]") {
    auto tracker = tracker_with(1000, 10'000, 500);
    tracker.should_request(7, 1, kServerA, 0);
    tracker.release(7, kServerA, 2000 * kMs);
    CHECK_FALSE(tracker.renew(7, 1, kServerA, 2300 * kMs));  // resubscribed at once
    CHECK(dropped_ids(tracker, 3000 * kMs).empty());
    CHECK(tracker.holders(7) == 1);
}

TEST_CASE("a lease not renewed expires, renewals keep it", "[interest_tracker]") {
    auto tracker = tracker_with(1000, 3000, 500);
    tracker.should_request(7, 1, kServerA, 0);  // A renews, B was killed
    tracker.renew(7, 1, kServerB, 0);
    tracker.should_request(8, 1, kServerB, 0);  // only B wanted 8
    for (int64_t t = 1000; t <= 6000; t += 1000) tracker.renew(7, 1, kServerA, t * kMs);
    CHECK(dropped_ids(tracker, 2999 * kMs).empty());
    CHECK(dropped_ids(tracker, 3000 * kMs).empty());  // B's leases end now; 8 is held
    CHECK(tracker.counters().leases_expired == 2);
    CHECK(tracker.holders(7) == 1);
    CHECK(dropped_ids(tracker, 3500 * kMs) == std::vector<uint64_t>{8});
    // A stops renewing: 7 goes a lease and a hold after its last renewal.
    CHECK(dropped_ids(tracker, 8999 * kMs).empty());
    CHECK(dropped_ids(tracker, 9000 * kMs).empty());
    CHECK(dropped_ids(tracker, 9500 * kMs) == std::vector<uint64_t>{7});
}

TEST_CASE("a server releases only its own interest", "[interest_tracker]") {
    auto tracker = tracker_with(1000);
    tracker.should_request(7, 1, kServerA, 0);
    tracker.release(7, kServerB, 10 * kMs);  // B never held it
    tracker.release(9, kServerB, 10 * kMs);  // nor this unknown item
    CHECK(tracker.holders(7) == 1);
    CHECK(tracker.counters().releases == 0);
    CHECK(dropped_ids(tracker, 5000 * kMs).empty());
}

TEST_CASE("a renewal of an item nobody wanted is new interest", "[interest_tracker]") {
    auto tracker = tracker_with(1000, 3000, 0);
    CHECK(tracker.renew(7, 1, kServerA, 0));  // e.g. dropped while A's renewals were lost
    CHECK_FALSE(tracker.renew(7, 1, kServerA, 1000 * kMs));
    CHECK(tracker.counters().renewals == 2);
}

TEST_CASE("an item holds at most kMaxServersPerItem leases", "[interest_tracker]") {
    auto tracker = tracker_with(1000);
    for (uint64_t server = 1; server <= InterestTracker::kMaxServersPerItem; ++server) {
        tracker.renew(7, 1, server, 0);
    }
    CHECK(tracker.holders(7) == InterestTracker::kMaxServersPerItem);
    CHECK_FALSE(tracker.renew(7, 1, 100'000, 0));
    CHECK_FALSE(tracker.should_request(7, 1, 100'001, 10'000 * kMs));
    CHECK(tracker.holders(7) == InterestTracker::kMaxServersPerItem);
    CHECK(tracker.counters().refused == 2);
    CHECK(tracker.lease_count() == InterestTracker::kMaxServersPerItem);
    // A holder renewing is never refused.
    tracker.renew(7, 1, 1, 10 * kMs);
    CHECK(tracker.counters().refused == 2);
}
