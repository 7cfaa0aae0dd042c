// Tests for server/item_cache.h: every ItemCache::Outcome, the name index,
// invalidation and the max_items limit.
#include "server/item_cache.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "proto/source_ids.h"

namespace {

using mdcast::server::CachedItem;
using mdcast::server::ItemCache;
using Outcome = ItemCache::Outcome;
namespace wire = mdcast::wire::v1;

wire::Refresh make_refresh(uint64_t id, uint64_t seq, const std::string& name = "VOD.L",
                           const std::string& service = "SVC") {
    wire::Refresh r;
    r.set_item_id(id);
    r.set_item_seq(seq);
    r.set_service_id(1);
    r.set_service_name(service);
    r.set_item_name(name);
    r.mutable_status()->set_stream_state(wire::STREAM_OPEN);
    r.mutable_status()->set_data_state(wire::DATA_OK);
    auto* bid = r.mutable_fields()->add_fields();
    bid->set_id(22);
    bid->mutable_decimal_value()->set_mantissa(10000 + static_cast<int64_t>(seq));
    bid->mutable_decimal_value()->set_exponent(-2);
    auto* size = r.mutable_fields()->add_fields();
    size->set_id(30);
    size->set_int_value(100);
    return r;
}

mdcast::proto::UpdateView make_update(uint64_t id, uint64_t seq) {
    using mdcast::proto::FieldEntry;
    using mdcast::proto::FieldKind;
    mdcast::proto::UpdateView u;
    u.item_id = id;
    u.item_seq = seq;
    u.fields.push_back(FieldEntry{30, FieldKind::kInt, 0, static_cast<int64_t>(seq) * 10, 0, {}});
    u.fields.push_back(FieldEntry{32, FieldKind::kInt, 0, 5, 0, {}});
    return u;
}

// The image as protobuf bytes, for before/after comparisons.
std::string image_bytes(const CachedItem& item) {
    wire::FieldList list;
    item.image.to_field_list(list);
    return list.SerializeAsString();
}

wire::ItemStatus make_status(uint64_t id, wire::StreamState stream, wire::DataState data,
                             wire::StatusCode code) {
    wire::ItemStatus s;
    s.set_item_id(id);
    s.mutable_status()->set_stream_state(stream);
    s.mutable_status()->set_data_state(data);
    s.mutable_status()->set_code(code);
    return s;
}

// Item "A" of distributors 1, 2 and 3, cached in that order; their ids.
std::vector<uint64_t> cache_three_members(ItemCache& cache) {
    using mdcast::proto::make_item_id;
    const std::vector<uint64_t> ids{make_item_id(1, 5), make_item_id(2, 9), make_item_id(3, 4)};
    CachedItem* item = nullptr;
    for (uint64_t id : ids) {
        REQUIRE(cache.apply_refresh(make_refresh(id, 1, "A"), item) == Outcome::kApplied);
    }
    return ids;
}

std::vector<uint32_t> ids_of(const mdcast::proto::FieldImage& image) {
    std::vector<uint32_t> ids;
    for (const auto& slot : image.slots()) ids.push_back(slot.id);
    return ids;
}

}  // namespace

TEST_CASE("a refresh creates the item with its name index", "[item_cache]") {
    ItemCache cache(64, 100);
    CachedItem* item = nullptr;
    REQUIRE(cache.apply_refresh(make_refresh(7, 3, "VOD.L", "SVC"), item) == Outcome::kApplied);
    REQUIRE(item != nullptr);
    CHECK(item->id == 7);
    CHECK(item->service_id == 1);
    CHECK(item->service_name == "SVC");
    CHECK(item->name == "VOD.L");
    CHECK(item->item_seq == 3);
    CHECK(item->has_image);
    CHECK(item->status.data_state() == wire::DATA_OK);
    CHECK(ids_of(item->image) == std::vector<uint32_t>{22, 30});
    CHECK(cache.size() == 1);
    CHECK(cache.find(7) == item);
    CHECK(cache.find("SVC", "VOD.L") == item);
    CHECK(cache.find("SVC", "BARC.L") == nullptr);
    CHECK(cache.find("OTHER", "VOD.L") == nullptr);
    CHECK(cache.find(8) == nullptr);
}

TEST_CASE("the name index does not confuse service and item boundaries", "[item_cache]") {
    ItemCache cache(64, 100);
    CachedItem* a = nullptr;
    CachedItem* b = nullptr;
    REQUIRE(cache.apply_refresh(make_refresh(1, 1, "BC", "A"), a) == Outcome::kApplied);
    REQUIRE(cache.apply_refresh(make_refresh(2, 1, "C", "AB"), b) == Outcome::kApplied);
    CHECK(cache.find("A", "BC") == a);
    CHECK(cache.find("AB", "C") == b);
    CHECK(a != b);
}

TEST_CASE("a solicited repeat with the same sequence and state is redundant", "[item_cache]") {
    ItemCache cache(64, 100);
    CachedItem* item = nullptr;
    REQUIRE(cache.apply_refresh(make_refresh(7, 3), item) == Outcome::kApplied);
    CachedItem* again = nullptr;
    auto answer = make_refresh(7, 3);
    answer.set_solicited(true);
    CHECK(cache.apply_refresh(answer, again) == Outcome::kRedundant);
    CHECK(again == item);
    CHECK(cache.size() == 1);
}

TEST_CASE("a solicited clear_cache refresh at the cached sequence is redundant", "[item_cache]") {
    // Several servers may ask the distributor for the same image; every answer is
    // multicast with clear_cache set. One at the cached sequence adds nothing.
    ItemCache cache(64, 100);
    CachedItem* item = nullptr;
    REQUIRE(cache.apply_refresh(make_refresh(7, 3), item) == Outcome::kApplied);
    REQUIRE(cache.apply_update(make_update(7, 4), item) == Outcome::kApplied);
    auto answer = make_refresh(7, 4);
    answer.set_clear_cache(true);
    answer.set_solicited(true);
    CHECK(cache.apply_refresh(answer, item) == Outcome::kRedundant);
    CHECK(item->item_seq == 4);
}

TEST_CASE("a publisher's own refresh at the cached sequence is applied", "[item_cache]") {
    // A publisher that reconnects re-images its items; its fields may differ even
    // when the sequence does not, so an unsolicited refresh always replaces the image.
    ItemCache cache(64, 100);
    CachedItem* item = nullptr;
    REQUIRE(cache.apply_refresh(make_refresh(7, 3), item) == Outcome::kApplied);
    auto reimage = make_refresh(7, 3);
    reimage.set_clear_cache(true);
    reimage.mutable_fields()->mutable_fields(0)->mutable_decimal_value()->set_mantissa(424242);
    CHECK(cache.apply_refresh(reimage, item) == Outcome::kApplied);
    CHECK(item->image.slots()[0].integer == 424242);
}

TEST_CASE("same sequence but a different data state is applied", "[item_cache]") {
    ItemCache cache(64, 100);
    CachedItem* item = nullptr;
    REQUIRE(cache.apply_refresh(make_refresh(7, 3), item) == Outcome::kApplied);
    auto suspect = make_refresh(7, 3);
    suspect.mutable_status()->set_data_state(wire::DATA_SUSPECT);
    CHECK(cache.apply_refresh(suspect, item) == Outcome::kApplied);
    CHECK(item->status.data_state() == wire::DATA_SUSPECT);
}

TEST_CASE("a refresh older than the cached image is stale", "[item_cache]") {
    ItemCache cache(64, 100);
    CachedItem* item = nullptr;
    REQUIRE(cache.apply_refresh(make_refresh(7, 10), item) == Outcome::kApplied);
    CHECK(cache.apply_refresh(make_refresh(7, 9), item) == Outcome::kStale);
    CHECK(item->item_seq == 10);
    CHECK(item->image.slots()[0].integer == 10010);
}

TEST_CASE("a clear_cache refresh with a lower sequence is accepted", "[item_cache]") {
    ItemCache cache(64, 100);
    CachedItem* item = nullptr;
    REQUIRE(cache.apply_refresh(make_refresh(7, 10), item) == Outcome::kApplied);
    auto restart = make_refresh(7, 1);  // the publisher restarted the item
    restart.set_clear_cache(true);
    restart.mutable_fields()->Clear();
    auto* f = restart.mutable_fields()->add_fields();
    f->set_id(25);
    f->set_int_value(1);
    CHECK(cache.apply_refresh(restart, item) == Outcome::kApplied);
    CHECK(item->item_seq == 1);
    CHECK(ids_of(item->image) == std::vector<uint32_t>{25});  // replaced, not merged
}

TEST_CASE("a refresh after invalidation is applied even with a lower sequence", "[item_cache]") {
    ItemCache cache(64, 100);
    CachedItem* item = nullptr;
    REQUIRE(cache.apply_refresh(make_refresh(7, 10), item) == Outcome::kApplied);
    ItemCache::invalidate(*item, wire::STATUS_SOURCE_DOWN, "gone");
    CHECK(cache.apply_refresh(make_refresh(7, 10), item) == Outcome::kApplied);
    CHECK(item->has_image);
    CHECK(item->status.data_state() == wire::DATA_OK);
}

TEST_CASE("an in-sequence update merges its fields", "[item_cache]") {
    ItemCache cache(64, 100);
    CachedItem* item = nullptr;
    REQUIRE(cache.apply_refresh(make_refresh(7, 3), item) == Outcome::kApplied);
    CachedItem* updated = nullptr;
    CHECK(cache.apply_update(make_update(7, 4), updated) == Outcome::kApplied);
    CHECK(updated == item);
    CHECK(item->item_seq == 4);
    CHECK(ids_of(item->image) == std::vector<uint32_t>{22, 30, 32});
    CHECK(item->image.slots()[1].integer == 40);  // replaced
    CHECK(item->image.slots()[2].integer == 5);   // appended
    CHECK(cache.apply_update(make_update(7, 5), updated) == Outcome::kApplied);
    CHECK(item->image.slots()[1].integer == 50);
    CHECK(item->image.size() == 3);
}

TEST_CASE("an old or repeated update is stale", "[item_cache]") {
    ItemCache cache(64, 100);
    CachedItem* item = nullptr;
    REQUIRE(cache.apply_refresh(make_refresh(7, 3), item) == Outcome::kApplied);
    CHECK(cache.apply_update(make_update(7, 3), item) == Outcome::kStale);
    CHECK(cache.apply_update(make_update(7, 1), item) == Outcome::kStale);
    REQUIRE(cache.apply_update(make_update(7, 4), item) == Outcome::kApplied);
    CHECK(cache.apply_update(make_update(7, 4), item) == Outcome::kStale);
    CHECK(item->item_seq == 4);
    CHECK(item->has_image);
}

TEST_CASE("an item sequence gap makes the item suspect without an image", "[item_cache]") {
    ItemCache cache(64, 100);
    CachedItem* item = nullptr;
    REQUIRE(cache.apply_refresh(make_refresh(7, 3), item) == Outcome::kApplied);
    CHECK(cache.apply_update(make_update(7, 6), item) == Outcome::kItemGap);  // 4, 5 lost
    REQUIRE(item != nullptr);
    CHECK_FALSE(item->has_image);
    CHECK(item->status.stream_state() == wire::STREAM_OPEN);
    CHECK(item->status.data_state() == wire::DATA_SUSPECT);
    CHECK(item->status.code() == wire::STATUS_UNRECOVERABLE_LOSS);
    CHECK_THAT(item->status.text(), Catch::Contains("4..5"));
    CHECK(item->item_seq == 3);  // not advanced past the gap

    // Further updates are dropped until a fresh image arrives.
    CHECK(cache.apply_update(make_update(7, 7), item) == Outcome::kNoImage);
    CHECK(cache.apply_refresh(make_refresh(7, 7), item) == Outcome::kApplied);
    CHECK(cache.apply_update(make_update(7, 8), item) == Outcome::kApplied);
}

TEST_CASE("a conflated update may skip sequences: it merges the ones skipped", "[item_cache]") {
    ItemCache cache(64, 100);
    CachedItem* item = nullptr;
    REQUIRE(cache.apply_refresh(make_refresh(7, 3), item) == Outcome::kApplied);
    auto conflated = make_update(7, 9);
    conflated.conflated = true;
    CHECK(cache.apply_update(conflated, item) == Outcome::kApplied);
    CHECK(item->has_image);
    CHECK(item->item_seq == 9);
    CHECK(cache.apply_update(make_update(7, 10), item) == Outcome::kApplied);
    CHECK(cache.apply_update(make_update(7, 12), item) == Outcome::kItemGap);  // unmarked: a gap
}

TEST_CASE("an update for an item without an image is dropped", "[item_cache]") {
    ItemCache cache(64, 100);
    CachedItem* item = nullptr;
    REQUIRE(cache.apply_refresh(make_refresh(7, 3), item) == Outcome::kApplied);
    ItemCache::invalidate(*item, wire::STATUS_SOURCE_DOWN, "source down");
    const std::string before = image_bytes(*item);
    CHECK(cache.apply_update(make_update(7, 4), item) == Outcome::kNoImage);
    CHECK(item->item_seq == 3);
    CHECK(image_bytes(*item) == before);
}

TEST_CASE("updates and status for an unknown item are ignored", "[item_cache]") {
    ItemCache cache(64, 100);
    CachedItem* item = reinterpret_cast<CachedItem*>(0x1);  // must be overwritten
    CHECK(cache.apply_update(make_update(99, 1), item) == Outcome::kUnknownItem);
    CHECK(item == nullptr);
    item = reinterpret_cast<CachedItem*>(0x1);
    CHECK(cache.apply_status(
              make_status(99, wire::STREAM_CLOSED, wire::DATA_SUSPECT, wire::STATUS_NOT_FOUND),
              item) == Outcome::kUnknownItem);
    CHECK(item == nullptr);
    CHECK(cache.size() == 0);  // neither creates an entry
}

TEST_CASE("a status updates the item's state", "[item_cache]") {
    ItemCache cache(64, 100);
    CachedItem* item = nullptr;
    REQUIRE(cache.apply_refresh(make_refresh(7, 3), item) == Outcome::kApplied);
    SECTION("open but suspect keeps the image") {
        CHECK(cache.apply_status(
                  make_status(7, wire::STREAM_OPEN, wire::DATA_SUSPECT, wire::STATUS_SOURCE_DOWN),
                  item) == Outcome::kApplied);
        CHECK(item->has_image);
        CHECK(item->status.data_state() == wire::DATA_SUSPECT);
        CHECK(item->status.code() == wire::STATUS_SOURCE_DOWN);
    }
    SECTION("closed drops the image") {
        CHECK(cache.apply_status(
                  make_status(7, wire::STREAM_CLOSED, wire::DATA_SUSPECT, wire::STATUS_NOT_FOUND),
                  item) == Outcome::kApplied);
        CHECK_FALSE(item->has_image);
        CHECK(item->status.stream_state() == wire::STREAM_CLOSED);
        CHECK(cache.apply_update(make_update(7, 4), item) == Outcome::kNoImage);
        CHECK(cache.find(7) != nullptr);  // the entry stays; the server decides when to erase
    }
    SECTION("open, suspect and recovering drops the image: upstream has none current") {
        // e.g. an interactive item nobody wanted, its source told to stop
        CHECK(cache.apply_status(
                  make_status(7, wire::STREAM_OPEN, wire::DATA_SUSPECT, wire::STATUS_RECOVERING),
                  item) == Outcome::kApplied);
        CHECK_FALSE(item->has_image);
        CHECK(item->status.stream_state() == wire::STREAM_OPEN);
        CHECK(cache.apply_refresh(make_refresh(7, 5), item) == Outcome::kApplied);
        CHECK(item->has_image);
    }
}

TEST_CASE("max_items refuses new items beyond the limit", "[item_cache]") {
    ItemCache cache(4, 3);
    CHECK(cache.max_items() == 3);
    CachedItem* item = nullptr;
    for (uint64_t id = 1; id <= 3; ++id) {
        REQUIRE(cache.apply_refresh(make_refresh(id, 1, "I" + std::to_string(id)), item) ==
                Outcome::kApplied);
    }
    CHECK(cache.size() == 3);
    item = reinterpret_cast<CachedItem*>(0x1);
    CHECK(cache.apply_refresh(make_refresh(4, 1, "I4"), item) == Outcome::kLimitReached);
    CHECK(item == nullptr);
    CHECK(cache.size() == 3);
    CHECK(cache.find(4) == nullptr);
    CHECK(cache.find("SVC", "I4") == nullptr);

    // Existing items still take refreshes at the limit.
    CHECK(cache.apply_refresh(make_refresh(2, 2, "I2"), item) == Outcome::kApplied);
    // After an erase there is room again.
    cache.erase(1);
    CHECK(cache.apply_refresh(make_refresh(4, 1, "I4"), item) == Outcome::kApplied);
    CHECK(cache.size() == 3);
}

TEST_CASE("max_items of zero refuses everything", "[item_cache]") {
    ItemCache cache(1, 0);
    CachedItem* item = nullptr;
    CHECK(cache.apply_refresh(make_refresh(1, 1), item) == Outcome::kLimitReached);
    CHECK(cache.size() == 0);
}

TEST_CASE("invalidate marks the image invalid and suspect", "[item_cache]") {
    ItemCache cache(64, 100);
    CachedItem* item = nullptr;
    REQUIRE(cache.apply_refresh(make_refresh(7, 3), item) == Outcome::kApplied);
    ItemCache::invalidate(*item, wire::STATUS_SOURCE_RESET, "new epoch");
    CHECK_FALSE(item->has_image);
    CHECK(item->status.stream_state() == wire::STREAM_OPEN);
    CHECK(item->status.data_state() == wire::DATA_SUSPECT);
    CHECK(item->status.code() == wire::STATUS_SOURCE_RESET);
    CHECK(item->status.text() == "new epoch");
}

TEST_CASE("erase removes the item and its name", "[item_cache]") {
    ItemCache cache(64, 100);
    CachedItem* item = nullptr;
    REQUIRE(cache.apply_refresh(make_refresh(7, 3, "A"), item) == Outcome::kApplied);
    REQUIRE(cache.apply_refresh(make_refresh(8, 3, "B"), item) == Outcome::kApplied);
    cache.erase(7);
    CHECK(cache.size() == 1);
    CHECK(cache.find(7) == nullptr);
    CHECK(cache.find("SVC", "A") == nullptr);
    CHECK(cache.find("SVC", "B") != nullptr);
    cache.erase(7);    // erasing twice is harmless
    cache.erase(999);  // as is an unknown id
    CHECK(cache.size() == 1);
}

TEST_CASE("clear empties the cache and for_each visits every item", "[item_cache]") {
    ItemCache cache(64, 100);
    CachedItem* item = nullptr;
    for (uint64_t id = 1; id <= 5; ++id) {
        REQUIRE(cache.apply_refresh(make_refresh(id, 1, "I" + std::to_string(id)), item) ==
                Outcome::kApplied);
    }
    uint64_t sum = 0;
    size_t visited = 0;
    cache.for_each([&](CachedItem& i) {
        sum += i.id;
        ++visited;
        ItemCache::invalidate(i, wire::STATUS_SOURCE_RESET, "reset");
    });
    CHECK(visited == 5);
    CHECK(sum == 15);
    CHECK_FALSE(cache.find(3)->has_image);

    cache.clear();
    CHECK(cache.size() == 0);
    CHECK(cache.find(1) == nullptr);
    CHECK(cache.find("SVC", "I1") == nullptr);
    // Usable after clear.
    CHECK(cache.apply_refresh(make_refresh(1, 1, "I1"), item) == Outcome::kApplied);
}

TEST_CASE("with images off only the item state is kept", "[item_cache]") {
    ItemCache cache(64, 100, false);
    CachedItem* item = nullptr;
    REQUIRE(cache.apply_refresh(make_refresh(7, 3), item) == Outcome::kApplied);
    CHECK(item->has_image);      // the stream is current ...
    CHECK(item->image.empty());  // ... but its fields live upstream
    CHECK(cache.apply_update(make_update(7, 4), item) == Outcome::kApplied);
    CHECK(item->item_seq == 4);
    CHECK(item->image.empty());
    CHECK(cache.apply_update(make_update(7, 6), item) == Outcome::kItemGap);  // loss is still seen
}

TEST_CASE("each distributor's item of one name is found, and erasing one keeps the others",
          "[item_cache]") {
    ItemCache cache(64, 100);
    const auto ids = cache_three_members(cache);
    const uint64_t one = ids[0], two = ids[1], three = ids[2];
    CHECK(cache.find("SVC", "A")->id == three);  // the newest heads the chain
    CHECK(cache.find("SVC", "A", 1)->id == one);
    CHECK(cache.find("SVC", "A", 2)->id == two);
    CHECK(cache.find("SVC", "A", 3)->id == three);
    CHECK(cache.find("SVC", "A", 4) == nullptr);

    cache.erase(two);  // from the middle
    CHECK(cache.find("SVC", "A", 2) == nullptr);
    CHECK(cache.find("SVC", "A", 1)->id == one);
    cache.erase(three);  // the head: the next one is indexed under its own strings
    CHECK(cache.find("SVC", "A")->id == one);
    CHECK(cache.find("SVC", "A")->same_name == nullptr);
    cache.erase(one);
    CHECK(cache.find("SVC", "A") == nullptr);
    CHECK(cache.size() == 0);
}

TEST_CASE("the same name's item of another distributor is found along the chain, both ways",
          "[item_cache]") {
    ItemCache cache(64, 100);
    const auto ids = cache_three_members(cache);
    const uint64_t one = ids[0], two = ids[1], three = ids[2];
    CachedItem& first = *cache.find(one);
    CachedItem& last = *cache.find(three);
    CHECK(ItemCache::same_name_from(first, 3) == &last);  // the newer one, before it
    CHECK(ItemCache::same_name_from(last, 1) == &first);  // the older one, after it
    CHECK(ItemCache::same_name_from(first, 1) == &first);
    CHECK(ItemCache::same_name_from(first, 4) == nullptr);
    cache.erase(two);  // the links close over the gap
    CHECK(ItemCache::same_name_from(first, 3) == &last);
    CHECK(ItemCache::same_name_from(last, 1) == &first);
    CHECK(ItemCache::same_name_from(first, 2) == nullptr);
}

TEST_CASE("a service's items are listed, and erasing one keeps the list whole", "[item_cache]") {
    using mdcast::proto::make_item_id;
    ItemCache cache(64, 100);
    CachedItem* item = nullptr;
    for (uint64_t n = 1; n <= 4; ++n) {
        auto refresh = make_refresh(make_item_id(2, n), 1, "N" + std::to_string(n), "SVC");
        refresh.set_service_id(mdcast::proto::make_service_id(2, 1));
        REQUIRE(cache.apply_refresh(refresh, item) == Outcome::kApplied);
    }
    const auto* listed = cache.items_of_service("SVC", 2);
    REQUIRE(listed);
    CHECK(listed->size() == 4);
    CHECK(cache.items_of_service("SVC", 3) == nullptr);
    CHECK(cache.items_of_service("OTHER", 2) == nullptr);
    cache.erase(make_item_id(2, 1));
    cache.erase(make_item_id(2, 3));
    listed = cache.items_of_service("SVC", 2);
    REQUIRE(listed);
    std::vector<std::string> names;
    for (const CachedItem* i : *listed) names.push_back(i->name);
    std::sort(names.begin(), names.end());
    CHECK(names == std::vector<std::string>{"N2", "N4"});
    cache.erase(make_item_id(2, 2));
    cache.erase(make_item_id(2, 4));
    CHECK(cache.items_of_service("SVC", 2) == nullptr);
}

// A redundancy failover (server/redundancy/follow_standby.cpp): the follower
// takes the standby's updates at its own id and sequence; its own source's
// messages are not applied meanwhile.
TEST_CASE("a follower applies its standby's updates at its own sequence", "[item_cache]") {
    using mdcast::proto::make_item_id;
    ItemCache cache(64, 100);
    CachedItem* item = nullptr;
    const uint64_t own = make_item_id(1, 5), standby = make_item_id(2, 9);
    REQUIRE(cache.apply_refresh(make_refresh(own, 40, "A"), item) == Outcome::kApplied);
    REQUIRE(cache.apply_refresh(make_refresh(standby, 7, "A"), item) == Outcome::kApplied);
    CachedItem& follower = *cache.find(own);
    CachedItem& source = *cache.find(standby);
    ItemCache::follow(follower, source);
    CHECK(follower.fed_by == &source);
    CHECK(source.feeds == &follower);

    auto update = make_update(standby, 8);
    REQUIRE(cache.apply_update(update, item) == Outcome::kApplied);
    CHECK(cache.apply_followed(follower, update) == Outcome::kApplied);
    CHECK(update.item_id == own);
    CHECK(update.item_seq == 41);
    CHECK(follower.item_seq == 41);
    CHECK(follower.image.find(32) != nullptr);

    // Its own source is not applied while it follows.
    CHECK(cache.apply_update(make_update(own, 41), item) == Outcome::kFollowing);
    CHECK(cache.apply_refresh(make_refresh(own, 50, "A"), item) == Outcome::kFollowing);
    CHECK(cache.apply_status(
              make_status(own, wire::STREAM_OPEN, wire::DATA_SUSPECT, wire::STATUS_SOURCE_DOWN),
              item) == Outcome::kFollowing);
    CHECK(follower.item_seq == 41);

    // Erasing the standby ends the link; the follower applies its own again.
    cache.erase(standby);
    CHECK(follower.fed_by == nullptr);
    CHECK(cache.apply_update(make_update(own, 42), item) == Outcome::kApplied);
}
