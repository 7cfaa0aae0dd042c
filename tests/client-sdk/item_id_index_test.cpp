// Tests for client-sdk/src/item_id_index.h: the consumer's items by item id,
// checked against std::unordered_map through inserts, rebinds and erases that
// make long probe runs (ids of several distributors, growth, wrap-around).
#include "item_id_index.h"

#include <catch2/catch.hpp>
#include <random>
#include <unordered_map>
#include <vector>

#include "proto/source_ids.h"

namespace {

using mdcast::sdk::ItemIdIndex;

struct Item {
    int n = 0;
};

}  // namespace

TEST_CASE("an empty index finds nothing and erases nothing", "[item_id_index]") {
    ItemIdIndex<Item> index;
    CHECK(index.find(1) == nullptr);
    CHECK(index.find(0) == nullptr);
    CHECK_FALSE(index.erase(1));
    CHECK(index.size() == 0);
}

TEST_CASE("insert, rebind, erase and clear", "[item_id_index]") {
    ItemIdIndex<Item> index;
    Item a{1}, b{2};
    index.insert(7, &a);
    CHECK(index.find(7) == &a);
    index.insert(7, &b);  // rebinding replaces
    CHECK(index.find(7) == &b);
    CHECK(index.size() == 1);
    CHECK(index.find(0) == nullptr);  // 0 is never an id
    CHECK(index.erase(7));
    CHECK(index.find(7) == nullptr);
    CHECK_FALSE(index.erase(7));
    index.insert(8, &a);
    index.clear();
    CHECK(index.find(8) == nullptr);
    CHECK(index.size() == 0);
}

TEST_CASE("agrees with unordered_map under random inserts and erases", "[item_id_index]") {
    ItemIdIndex<Item> index;
    std::unordered_map<uint64_t, Item*> reference;
    std::vector<Item> items(64);
    std::mt19937_64 random(2026);
    for (int round = 0; round < 200000; ++round) {
        // Few distinct ids, from three distributors, so runs collide and wrap.
        const uint64_t id =
            mdcast::proto::make_item_id(static_cast<uint16_t>(random() % 3), 1 + random() % 3000);
        Item* item = &items[random() % items.size()];
        switch (random() % 3) {
            case 0:
            case 1:
                index.insert(id, item);
                reference[id] = item;
                break;
            default:
                CHECK(index.erase(id) == (reference.erase(id) == 1));
        }
        const uint64_t probe =
            mdcast::proto::make_item_id(static_cast<uint16_t>(random() % 3), 1 + random() % 3000);
        const auto it = reference.find(probe);
        REQUIRE(index.find(probe) == (it == reference.end() ? nullptr : it->second));
    }
    REQUIRE(index.size() == reference.size());
    for (const auto& [id, item] : reference) CHECK(index.find(id) == item);
}

TEST_CASE("one distributor's consecutive items each sit in their home slot", "[item_id_index]") {
    // The update path's lookup is then one slot, and consecutive items share
    // cache lines. A multiplicative hash of the whole id displaced some.
    ItemIdIndex<Item> index;
    Item item;
    for (uint64_t number = 1; number <= 1000; ++number) {
        index.insert(mdcast::proto::make_item_id(7, number), &item);
    }
    for (uint64_t number = 1; number <= 1000; ++number) {
        const uint64_t id = mdcast::proto::make_item_id(7, number);
        REQUIRE(index.find(id) == &item);
        REQUIRE(index.probes(id) == 1);
    }
}
