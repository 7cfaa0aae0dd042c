// Tests for server/pending_requests.h: subscribers waiting for an item's first
// image, the max_pending limit, and overdue retries.
//
// ClientSession is only forward-declared here; the tests use the addresses of
// distinct dummy objects as opaque client handles and never dereference them.
#include "server/pending_requests.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using mdcast::server::ClientSession;
using mdcast::server::PendingImage;
using mdcast::server::PendingRequests;
using mdcast::server::PendingSubscriber;
using AddResult = PendingRequests::AddResult;

struct Dummies {
    char storage[4] = {};
    ClientSession* operator[](size_t i) { return reinterpret_cast<ClientSession*>(&storage[i]); }
};

PendingSubscriber sub(ClientSession* client, bool snapshot = false,
                      std::vector<uint32_t> view = {}) {
    return PendingSubscriber{client, snapshot, std::move(view)};
}

}  // namespace

TEST_CASE("the first subscriber for a name creates the entry", "[pending_requests]") {
    Dummies clients;
    PendingRequests pending(10, 100);
    PendingImage* entry = nullptr;
    CHECK(pending.add("SVC", "VOD.L", sub(clients[0], true, {22, 25}), entry) == AddResult::kFirst);
    REQUIRE(entry != nullptr);
    CHECK(entry->service_name == "SVC");
    CHECK(entry->item_name == "VOD.L");
    REQUIRE(entry->waiting.size() == 1);
    CHECK(entry->waiting[0].client == clients[0]);
    CHECK(entry->waiting[0].snapshot);
    CHECK(entry->waiting[0].view == std::vector<uint32_t>{22, 25});
    CHECK(entry->attempts == 0);
    CHECK(entry->last_request_ns == 0);
    CHECK_FALSE(entry->told_recovering);
    CHECK(pending.size() == 1);
}

TEST_CASE("later subscribers for the same name join the entry", "[pending_requests]") {
    Dummies clients;
    PendingRequests pending(10, 100);
    PendingImage* first = nullptr;
    PendingImage* second = nullptr;
    REQUIRE(pending.add("SVC", "VOD.L", sub(clients[0]), first) == AddResult::kFirst);
    CHECK(pending.add("SVC", "VOD.L", sub(clients[1]), second) == AddResult::kJoined);
    CHECK(second == first);
    REQUIRE(first->waiting.size() == 2);
    CHECK(first->waiting[1].client == clients[1]);
    CHECK(pending.size() == 1);

    // Another item or another service is a separate entry.
    PendingImage* other = nullptr;
    CHECK(pending.add("SVC", "BARC.L", sub(clients[0]), other) == AddResult::kFirst);
    CHECK(pending.add("SVC2", "VOD.L", sub(clients[0]), other) == AddResult::kFirst);
    CHECK(pending.size() == 3);
}

TEST_CASE("service and item names do not run into each other", "[pending_requests]") {
    Dummies clients;
    PendingRequests pending(10, 100);
    PendingImage* e = nullptr;
    CHECK(pending.add("A", "BC", sub(clients[0]), e) == AddResult::kFirst);
    CHECK(pending.add("AB", "C", sub(clients[0]), e) == AddResult::kFirst);
    CHECK(pending.size() == 2);
}

TEST_CASE("max_pending refuses new names but not joins", "[pending_requests]") {
    Dummies clients;
    PendingRequests pending(2, 100);
    PendingImage* entry = nullptr;
    REQUIRE(pending.add("SVC", "A", sub(clients[0]), entry) == AddResult::kFirst);
    REQUIRE(pending.add("SVC", "B", sub(clients[0]), entry) == AddResult::kFirst);
    entry = reinterpret_cast<PendingImage*>(0x1);  // must be reset to null
    CHECK(pending.add("SVC", "C", sub(clients[0]), entry) == AddResult::kLimitReached);
    CHECK(entry == nullptr);
    CHECK(pending.size() == 2);
    // Joining an existing entry does not grow the table and is allowed at the limit.
    CHECK(pending.add("SVC", "A", sub(clients[1]), entry) == AddResult::kJoined);
    CHECK(entry != nullptr);
    // Once an entry is taken there is room again.
    REQUIRE(pending.take("SVC", "B").has_value());
    CHECK(pending.add("SVC", "C", sub(clients[0]), entry) == AddResult::kFirst);
}

TEST_CASE("max_pending of zero refuses every request", "[pending_requests]") {
    Dummies clients;
    PendingRequests pending(0, 100);
    PendingImage* entry = nullptr;
    CHECK(pending.add("SVC", "A", sub(clients[0]), entry) == AddResult::kLimitReached);
    CHECK(pending.size() == 0);
}

TEST_CASE("take hands over the waiting subscribers once", "[pending_requests]") {
    Dummies clients;
    PendingRequests pending(10, 100);
    PendingImage* entry = nullptr;
    REQUIRE(pending.add("SVC", "A", sub(clients[0], false, {22}), entry) == AddResult::kFirst);
    entry->attempts = 3;
    entry->last_request_ns = 12345;
    REQUIRE(pending.add("SVC", "A", sub(clients[1], true), entry) == AddResult::kJoined);

    auto taken = pending.take("SVC", "A");
    REQUIRE(taken.has_value());
    CHECK(taken->service_name == "SVC");
    CHECK(taken->item_name == "A");
    CHECK(taken->attempts == 3);
    CHECK(taken->last_request_ns == 12345);
    REQUIRE(taken->waiting.size() == 2);
    CHECK(taken->waiting[0].client == clients[0]);
    CHECK(taken->waiting[0].view == std::vector<uint32_t>{22});
    CHECK(taken->waiting[1].client == clients[1]);
    CHECK(taken->waiting[1].snapshot);
    CHECK(pending.size() == 0);
    CHECK_FALSE(pending.take("SVC", "A").has_value());
    CHECK_FALSE(pending.take("SVC", "never").has_value());
}

TEST_CASE("remove_client removes the client and drops entries left empty", "[pending_requests]") {
    Dummies clients;
    PendingRequests pending(10, 100);
    PendingImage* entry = nullptr;
    REQUIRE(pending.add("SVC", "ONLY_A", sub(clients[0]), entry) == AddResult::kFirst);
    REQUIRE(pending.add("SVC", "A_AND_B", sub(clients[0]), entry) == AddResult::kFirst);
    REQUIRE(pending.add("SVC", "A_AND_B", sub(clients[1]), entry) == AddResult::kJoined);
    REQUIRE(pending.add("SVC", "ONLY_B", sub(clients[1]), entry) == AddResult::kFirst);
    REQUIRE(pending.size() == 3);

    pending.remove_client(clients[0]);
    CHECK(pending.size() == 2);
    CHECK_FALSE(pending.take("SVC", "ONLY_A").has_value());
    auto shared = pending.take("SVC", "A_AND_B");
    REQUIRE(shared.has_value());
    REQUIRE(shared->waiting.size() == 1);
    CHECK(shared->waiting[0].client == clients[1]);

    // A client that waits for nothing changes nothing.
    pending.remove_client(clients[2]);
    CHECK(pending.size() == 1);
    pending.remove_client(clients[1]);
    CHECK(pending.size() == 0);
}

TEST_CASE("remove_client removes every occurrence of the client", "[pending_requests]") {
    Dummies clients;
    PendingRequests pending(10, 100);
    PendingImage* entry = nullptr;
    REQUIRE(pending.add("SVC", "A", sub(clients[0]), entry) == AddResult::kFirst);
    REQUIRE(pending.add("SVC", "A", sub(clients[0], true), entry) == AddResult::kJoined);
    REQUIRE(pending.add("SVC", "A", sub(clients[1]), entry) == AddResult::kJoined);
    pending.remove_client(clients[0]);
    auto left = pending.take("SVC", "A");
    REQUIRE(left.has_value());
    REQUIRE(left->waiting.size() == 1);
    CHECK(left->waiting[0].client == clients[1]);
}

TEST_CASE("overdue lists entries whose last request is older than the timeout",
          "[pending_requests]") {
    Dummies clients;
    PendingRequests pending(10, 100);
    PendingImage* a = nullptr;
    PendingImage* b = nullptr;
    PendingImage* c = nullptr;
    REQUIRE(pending.add("SVC", "A", sub(clients[0]), a) == AddResult::kFirst);
    REQUIRE(pending.add("SVC", "B", sub(clients[0]), b) == AddResult::kFirst);
    REQUIRE(pending.add("SVC", "C", sub(clients[0]), c) == AddResult::kFirst);
    const int64_t s = 1'000'000'000;
    a->last_request_ns = 10 * s;
    b->last_request_ns = 12 * s;
    c->last_request_ns = 14 * s;

    const int64_t timeout = 3 * s;
    CHECK(pending.overdue(12 * s, timeout).empty());
    auto due = pending.overdue(13 * s, timeout);  // exactly the timeout for A
    CHECK(due == std::vector<PendingImage*>{a});
    due = pending.overdue(15 * s + 1, timeout);
    std::sort(due.begin(), due.end());
    std::vector<PendingImage*> expected{a, b};
    std::sort(expected.begin(), expected.end());
    CHECK(due == expected);
    CHECK(pending.overdue(100 * s, timeout).size() == 3);

    // Re-sending a request (caller updates last_request_ns) makes it current again.
    a->last_request_ns = 15 * s;
    a->attempts += 1;
    due = pending.overdue(16 * s, timeout);
    CHECK(due == std::vector<PendingImage*>{b});  // A is no longer overdue, B (4 s) is

    auto all = pending.all();
    CHECK(all.size() == 3);
}

TEST_CASE("one client fills only its own share of the table", "[pending_requests]") {
    Dummies clients;
    PendingRequests pending(100, 3);
    PendingImage* entry = nullptr;
    for (int i = 0; i < 3; ++i) {
        CHECK(pending.add("SVC", "N" + std::to_string(i), sub(clients[0]), entry) ==
              AddResult::kFirst);
    }
    // Over its share: refused, whether the name is new or already waited for.
    CHECK(pending.add("SVC", "N3", sub(clients[0]), entry) == AddResult::kClientLimitReached);
    CHECK(entry == nullptr);
    CHECK(pending.add("SVC", "N0", sub(clients[0]), entry) == AddResult::kClientLimitReached);
    CHECK(pending.size() == 3);
    // Another client is not affected.
    CHECK(pending.add("SVC", "N3", sub(clients[1]), entry) == AddResult::kFirst);
    CHECK(pending.add("SVC", "N0", sub(clients[1]), entry) == AddResult::kJoined);
    // An image taken frees the share of everyone who waited for it.
    REQUIRE(pending.take("SVC", "N0").has_value());
    CHECK(pending.add("SVC", "N4", sub(clients[0]), entry) == AddResult::kFirst);
    // Put back (still waiting), it counts again.
    auto taken = pending.take("SVC", "N4");
    REQUIRE(taken.has_value());
    pending.restore(std::move(*taken));
    CHECK(pending.add("SVC", "N5", sub(clients[0]), entry) == AddResult::kClientLimitReached);
    // A client that goes frees its share.
    pending.remove_client(clients[0]);
    CHECK(pending.add("SVC", "N5", sub(clients[0]), entry) == AddResult::kFirst);
}

TEST_CASE("a name asked again and again without an answer is asked less and less often",
          "[pending_requests]") {
    Dummies clients;
    PendingRequests pending(10, 10);
    PendingImage* entry = nullptr;
    REQUIRE(pending.add("SVC", "NEVER", sub(clients[0]), entry) == AddResult::kFirst);
    const int64_t timeout = 1'000'000'000;
    // attempts 1: the timeout; 2: twice; 3: four times; ... at most kMaxBackoff times.
    const std::vector<std::pair<uint32_t, int64_t>> waits{{1, 1},  {2, 2},  {3, 4},  {4, 8},
                                                          {5, 16}, {6, 16}, {40, 16}};
    for (const auto& [attempts, factor] : waits) {
        entry->attempts = attempts;
        entry->last_request_ns = 1000 * timeout;
        CHECK(pending.overdue(1000 * timeout + factor * timeout - 1, timeout).empty());
        CHECK(pending.overdue(1000 * timeout + factor * timeout, timeout).size() == 1);
    }
    static_assert(PendingRequests::kMaxBackoff == 16);
}

TEST_CASE("names of one service fill only that service's share of the table",
          "[pending_requests][hardening]") {
    Dummies clients;
    PendingRequests pending(100, 100, 2);
    PendingImage* entry = nullptr;
    REQUIRE(pending.add("SILENT", "A", sub(clients[0]), entry) == AddResult::kFirst);
    REQUIRE(pending.add("SILENT", "B", sub(clients[1]), entry) == AddResult::kFirst);
    // A third name of that service is refused, whoever asks; joins add no name.
    CHECK(pending.add("SILENT", "C", sub(clients[2]), entry) == AddResult::kServiceLimitReached);
    CHECK(entry == nullptr);
    CHECK(pending.add("SILENT", "A", sub(clients[2]), entry) == AddResult::kJoined);
    // Another service is not affected.
    CHECK(pending.add("OTHER", "C", sub(clients[2]), entry) == AddResult::kFirst);
    // A name answered frees its place; put back, it counts again.
    auto taken = pending.take("SILENT", "A");
    REQUIRE(taken.has_value());
    pending.restore(std::move(*taken));
    CHECK(pending.add("SILENT", "C", sub(clients[2]), entry) == AddResult::kServiceLimitReached);
    REQUIRE(pending.take("SILENT", "A").has_value());
    CHECK(pending.add("SILENT", "C", sub(clients[2]), entry) == AddResult::kFirst);
    // A client that goes takes the names only it waited for with it.
    pending.remove_client(clients[1]);
    CHECK(pending.add("SILENT", "D", sub(clients[2]), entry) == AddResult::kFirst);
    CHECK(pending.add("SILENT", "E", sub(clients[2]), entry) == AddResult::kServiceLimitReached);
}
