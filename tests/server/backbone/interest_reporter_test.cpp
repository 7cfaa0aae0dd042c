// Tests for server/backbone/interest_reporter.h: holds and releases go out at the next
// flush, grouped by distributor and split so each message fits a datagram; a
// release for an item subscribed again meanwhile is not sent; renewals at most
// once per proto::kInterestRenewMs.
#include "server/backbone/interest_reporter.h"

#include <catch2/catch.hpp>
#include <utility>
#include <vector>

#include "proto/limits.h"
#include "proto/source_ids.h"

namespace {

using mdcast::server::InterestReporter;
namespace wire = mdcast::wire::v1;
constexpr int64_t kMs = 1'000'000;

struct RecordingLink : InterestReporter::Link {
    std::vector<std::pair<uint16_t, wire::Interest>> sent;
    bool accept = true;
    bool send_interest(uint16_t source, wire::Interest& interest) override {
        sent.emplace_back(source, interest);
        return accept;
    }
};

const auto nothing_held = [](uint64_t) { return false; };

}  // namespace

TEST_CASE("releases go to each item's own distributor at the next flush", "[interest_reporter]") {
    RecordingLink link;
    InterestReporter reporter(link);
    const uint64_t a = mdcast::proto::make_item_id(1, 5), b = mdcast::proto::make_item_id(2, 5);
    reporter.release(a);
    reporter.release(a);  // queued once
    reporter.release(b);
    CHECK(link.sent.empty());
    reporter.flush(nothing_held);
    REQUIRE(link.sent.size() == 2);
    for (const auto& [source, interest] : link.sent) {
        REQUIRE(interest.released_item_ids_size() == 1);
        CHECK(mdcast::proto::item_source(interest.released_item_ids(0)) == source);
        CHECK(interest.held_item_ids_size() == 0);
    }
    CHECK(reporter.counters().released == 2);
    reporter.flush(nothing_held);
    CHECK(link.sent.size() == 2);  // nothing left
}

TEST_CASE("an item subscribed again before the flush is not released", "[interest_reporter]") {
    RecordingLink link;
    InterestReporter reporter(link);
    const uint64_t item = mdcast::proto::make_item_id(1, 9);
    reporter.release(item);
    reporter.flush([&](uint64_t id) { return id == item; });
    CHECK(link.sent.empty());
    CHECK(reporter.counters().released == 0);
}

TEST_CASE("a hold goes out as a held id while the item still has a subscriber",
          "[interest_reporter]") {
    RecordingLink link;
    InterestReporter reporter(link);
    const uint64_t kept = mdcast::proto::make_item_id(1, 1),
                   gone = mdcast::proto::make_item_id(1, 2);
    reporter.hold(kept);
    reporter.hold(gone);
    reporter.flush([&](uint64_t id) { return id == kept; });
    REQUIRE(link.sent.size() == 1);
    REQUIRE(link.sent[0].second.held_item_ids_size() == 1);
    CHECK(link.sent[0].second.held_item_ids(0) == kept);
}

TEST_CASE("renewals are due once per interval and split to fit a datagram", "[interest_reporter]") {
    RecordingLink link;
    InterestReporter reporter(link);
    const int64_t interval = int64_t{mdcast::proto::kInterestRenewMs} * kMs;
    CHECK(reporter.renewal_due(interval));
    CHECK_FALSE(reporter.renewal_due(interval + interval / 2));
    CHECK(reporter.renewal_due(2 * interval));
    const size_t per_message = mdcast::proto::kMaxInterestIdsPerMessage;
    std::vector<uint64_t> held;
    for (uint64_t n = 1; n <= per_message * 2 + 3; ++n)
        held.push_back(mdcast::proto::make_item_id(1, n));
    link.accept = false;  // no control address yet: counted
    reporter.renew(held);
    REQUIRE(link.sent.size() == 3);
    CHECK(static_cast<size_t>(link.sent[0].second.held_item_ids_size()) == per_message);
    CHECK(static_cast<size_t>(link.sent[1].second.held_item_ids_size()) == per_message);
    CHECK(link.sent[2].second.held_item_ids_size() == 3);
    CHECK(reporter.counters().renewed == held.size());
    CHECK(reporter.counters().unsent == 3);
    // The largest message fits a 1400-byte datagram (the default) with both headers.
    CHECK(link.sent[0].second.ByteSizeLong() + 8 + 32 < 1400);
}
