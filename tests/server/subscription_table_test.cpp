// Tests for server/subscription_table.h: subscribers per item, grouped by view.
#include "server/subscription_table.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

namespace {

// The n-th group of an item (groups are a list: their addresses never move).
template <class Groups>
const auto& nth(const Groups& groups, size_t n) {
    return *std::next(groups.begin(), static_cast<std::ptrdiff_t>(n));
}

struct FakeClient {
    int id = 0;
};

using Table = mdcast::server::SubscriptionTable<FakeClient>;
using View = std::vector<uint32_t>;

const View kAllFields{};
const View kBidAsk{22, 25};
const View kBidOnly{22};

}  // namespace

TEST_CASE("an empty table", "[subscription_table]") {
    Table table;
    CHECK(table.item_count() == 0);
    CHECK(table.find(1) == nullptr);
    CHECK(table.item_ids().empty());
    CHECK(table.take(1).empty());
    FakeClient c;
    CHECK_FALSE(table.remove(1, &c));
}

TEST_CASE("add and remove one client", "[subscription_table]") {
    Table table;
    FakeClient a;
    REQUIRE(table.add(7, &a, kAllFields));
    CHECK(table.item_count() == 1);
    const auto* groups = table.find(7);
    REQUIRE(groups != nullptr);
    REQUIRE(groups->size() == 1);
    CHECK(nth(*groups, 0).view.empty());
    CHECK(nth(*groups, 0).clients == std::vector<FakeClient*>{&a});

    CHECK(table.remove(7, &a));
    CHECK(table.find(7) == nullptr);  // last client gone: the item goes too
    CHECK(table.item_count() == 0);
    CHECK_FALSE(table.remove(7, &a));
}

TEST_CASE("clients with the same view share a group", "[subscription_table]") {
    Table table;
    FakeClient a, b, c;
    REQUIRE(table.add(7, &a, kBidAsk));
    REQUIRE(table.add(7, &b, kBidAsk));
    REQUIRE(table.add(7, &c, kBidAsk));
    const auto* groups = table.find(7);
    REQUIRE(groups != nullptr);
    REQUIRE(groups->size() == 1);
    CHECK(nth(*groups, 0).view == kBidAsk);
    CHECK(nth(*groups, 0).clients == std::vector<FakeClient*>{&a, &b, &c});
}

TEST_CASE("different views get separate groups", "[subscription_table]") {
    Table table;
    FakeClient a, b, c, d;
    REQUIRE(table.add(7, &a, kAllFields));
    REQUIRE(table.add(7, &b, kBidAsk));
    REQUIRE(table.add(7, &c, kBidOnly));
    REQUIRE(table.add(7, &d, kBidAsk));
    const auto* groups = table.find(7);
    REQUIRE(groups != nullptr);
    REQUIRE(groups->size() == 3);
    for (const auto& g : *groups) {
        if (g.view == kAllFields) CHECK(g.clients == std::vector<FakeClient*>{&a});
        if (g.view == kBidAsk) CHECK(g.clients == std::vector<FakeClient*>{&b, &d});
        if (g.view == kBidOnly) CHECK(g.clients == std::vector<FakeClient*>{&c});
    }
    // Removing one client of a shared group keeps the group.
    REQUIRE(table.remove(7, &b));
    REQUIRE(table.find(7)->size() == 3);
    // Removing the only client of a group drops that group only.
    REQUIRE(table.remove(7, &c));
    groups = table.find(7);
    REQUIRE(groups->size() == 2);
    CHECK(std::none_of(groups->begin(), groups->end(),
                       [](const Table::Group& g) { return g.view == kBidOnly; }));
}

TEST_CASE("a client cannot hold the same item twice, even in another view",
          "[subscription_table]") {
    Table table;
    FakeClient a;
    REQUIRE(table.add(7, &a, kBidAsk));
    CHECK_FALSE(table.add(7, &a, kBidAsk));
    CHECK_FALSE(table.add(7, &a, kAllFields));
    CHECK_FALSE(table.add(7, &a, kBidOnly));
    const auto* groups = table.find(7);
    REQUIRE(groups->size() == 1);
    CHECK(nth(*groups, 0).clients.size() == 1);
    // The same client may hold other items.
    CHECK(table.add(8, &a, kAllFields));
    CHECK(table.item_count() == 2);
}

TEST_CASE("removing the last client drops the group and the item", "[subscription_table]") {
    Table table;
    FakeClient a, b;
    REQUIRE(table.add(7, &a, kBidAsk));
    REQUIRE(table.add(7, &b, kAllFields));
    REQUIRE(table.add(9, &b, kAllFields));
    CHECK(table.remove(7, &a));
    CHECK(table.find(7)->size() == 1);
    CHECK(table.remove(7, &b));
    CHECK(table.find(7) == nullptr);
    CHECK(table.item_count() == 1);
    CHECK(table.find(9) != nullptr);
    // Removing a client that does not hold an existing item leaves it alone.
    CHECK_FALSE(table.remove(9, &a));
    CHECK(table.find(9) != nullptr);
}

TEST_CASE("take hands over every group and forgets the item", "[subscription_table]") {
    Table table;
    FakeClient a, b, c;
    REQUIRE(table.add(7, &a, kAllFields));
    REQUIRE(table.add(7, &b, kBidAsk));
    REQUIRE(table.add(7, &c, kBidAsk));
    REQUIRE(table.add(8, &a, kAllFields));
    const auto groups = table.take(7);
    REQUIRE(groups.size() == 2);
    size_t clients = 0;
    for (const auto& g : groups) clients += g.clients.size();
    CHECK(clients == 3);
    CHECK(table.find(7) == nullptr);
    CHECK(table.item_count() == 1);
    CHECK(table.take(7).empty());
    // The clients can subscribe again afterwards.
    CHECK(table.add(7, &a, kBidAsk));
}

TEST_CASE("item_ids lists every subscribed item once", "[subscription_table]") {
    Table table;
    FakeClient a, b;
    for (uint64_t id : {5u, 1u, 9u}) {
        REQUIRE(table.add(id, &a, kAllFields));
        REQUIRE(table.add(id, &b, kBidOnly));
    }
    auto ids = table.item_ids();
    std::sort(ids.begin(), ids.end());
    CHECK(ids == std::vector<uint64_t>{1, 5, 9});
    table.remove(5, &a);
    table.remove(5, &b);
    ids = table.item_ids();
    std::sort(ids.begin(), ids.end());
    CHECK(ids == std::vector<uint64_t>{1, 9});
    table.clear();
    CHECK(table.item_ids().empty());
    CHECK(table.item_count() == 0);
}

TEST_CASE("many clients on one item", "[subscription_table]") {
    Table table;
    std::vector<FakeClient> clients(1000);
    for (size_t i = 0; i < clients.size(); ++i) {
        REQUIRE(table.add(1, &clients[i], i % 2 ? kBidAsk : kAllFields));
    }
    REQUIRE(table.find(1)->size() == 2);
    for (auto& c : clients) REQUIRE(table.remove(1, &c));
    CHECK(table.find(1) == nullptr);
}

TEST_CASE("each client's group is indexed: found, removed and taken back without a scan") {
    Table table;
    std::vector<FakeClient> clients(2000);
    // Conflated subscriptions share a group by interval (and view and encoding).
    for (size_t i = 0; i < clients.size(); ++i)
        CHECK(table.add(7, &clients[i], {}, true, i % 2 ? 200 : 100));
    CHECK_FALSE(table.add(7, &clients[5], {}, true, 200));  // already held
    REQUIRE(table.find(7)->size() == 2);
    for (size_t i = 0; i < clients.size(); i += 4) CHECK(table.remove(7, &clients[i]));
    for (size_t i = 0; i < clients.size(); ++i) {
        auto* group = table.group_of(7, &clients[i]);
        if (i % 4 == 0) {
            CHECK(group == nullptr);
            continue;
        }
        REQUIRE(group != nullptr);
        CHECK(group->pace.interval_ms == (i % 2 ? 200u : 100u));
        CHECK(group->clients.size() == (i % 2 ? 1000u : 500u));
        CHECK(table.group_by_serial(7, group->serial) == group);
    }
    const uint64_t serial = table.group_of(7, &clients[1])->serial;
    CHECK(table.take(7).size() == 2);
    CHECK(table.group_of(7, &clients[1]) == nullptr);
    CHECK(table.group_by_serial(7, serial) == nullptr);
    CHECK(table.add(7, &clients[1], {}, true, 200));  // free again once taken, a new group
    CHECK(table.group_of(7, &clients[1])->serial != serial);
}
