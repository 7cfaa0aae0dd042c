// Tests for distributor/item_registry.h: service ownership, id assignment, the
// max_services and max_items limits, and the directory.
#include "distributor/item_registry.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "proto/source_ids.h"

namespace {

using mdcast::distributor::ItemEntry;
using mdcast::distributor::ItemRegistry;
using mdcast::distributor::ServiceEntry;
using Announce = ItemRegistry::AnnounceResult;
namespace wire = mdcast::wire::v1;

constexpr uint64_t kSessionA = 101;
constexpr uint64_t kSessionB = 202;

ServiceEntry* announce_ok(ItemRegistry& registry, const std::string& name, uint64_t session,
                          wire::ServiceMode mode = wire::SERVICE_BROADCAST) {
    ServiceEntry* entry = nullptr;
    REQUIRE(registry.announce(name, mode, session, entry) == Announce::kAccepted);
    REQUIRE(entry != nullptr);
    return entry;
}

}  // namespace

TEST_CASE("announce creates services with ids from 1", "[item_registry]") {
    ItemRegistry registry(0, 10, 100);
    ServiceEntry* a = announce_ok(registry, "FEED_A", kSessionA);
    ServiceEntry* b = announce_ok(registry, "FEED_B", kSessionA, wire::SERVICE_INTERACTIVE);
    CHECK(a->id == 1);
    CHECK(b->id == 2);
    CHECK(a->name == "FEED_A");
    CHECK(a->state == wire::SERVICE_UP);
    CHECK(a->owner_session == kSessionA);
    CHECK(a->mode == wire::SERVICE_BROADCAST);
    CHECK(b->mode == wire::SERVICE_INTERACTIVE);
    CHECK(a->item_count == 0);
    CHECK(registry.service_count() == 2);
    CHECK(registry.service(1) == a);
    CHECK(registry.service(2) == b);
    CHECK(registry.service(std::string("FEED_B")) == b);
    CHECK(registry.service(0u) == nullptr);
    CHECK(registry.service(3u) == nullptr);
    CHECK(registry.service(std::string("NOPE")) == nullptr);
}

TEST_CASE("the same publisher may announce again", "[item_registry]") {
    ItemRegistry registry(0, 10, 100);
    ServiceEntry* first = announce_ok(registry, "FEED", kSessionA);
    ServiceEntry* again = announce_ok(registry, "FEED", kSessionA, wire::SERVICE_INTERACTIVE);
    CHECK(again == first);
    CHECK(again->id == 1);
    CHECK(again->mode == wire::SERVICE_INTERACTIVE);
    CHECK(registry.service_count() == 1);
}

TEST_CASE("another publisher is refused while the service is owned", "[item_registry]") {
    ItemRegistry registry(0, 10, 100);
    ServiceEntry* owned = announce_ok(registry, "FEED", kSessionA);
    ServiceEntry* out = nullptr;
    CHECK(registry.announce("FEED", wire::SERVICE_INTERACTIVE, kSessionB, out) ==
          Announce::kOwnedByAnother);
    CHECK(out == nullptr);
    CHECK(owned->owner_session == kSessionA);
    CHECK(owned->mode == wire::SERVICE_BROADCAST);  // unchanged by the refused announce
    CHECK(owned->state == wire::SERVICE_UP);
}

TEST_CASE("release marks services down and allows a takeover", "[item_registry]") {
    ItemRegistry registry(0, 10, 100);
    ServiceEntry* feed = announce_ok(registry, "FEED", kSessionA);
    ServiceEntry* other = announce_ok(registry, "OTHER", kSessionB);
    ServiceEntry* second = announce_ok(registry, "FEED2", kSessionA);
    ItemEntry* item = registry.register_item(feed->id, "VOD.L");
    REQUIRE(item != nullptr);

    const auto released = registry.release(kSessionA);
    CHECK(released == std::vector<uint32_t>{feed->id, second->id});
    CHECK(feed->state == wire::SERVICE_DOWN);
    CHECK(feed->owner_session == 0);
    CHECK(second->state == wire::SERVICE_DOWN);
    CHECK(other->state == wire::SERVICE_UP);  // another publisher's service is untouched
    CHECK(other->owner_session == kSessionB);
    CHECK(registry.release(kSessionA).empty());  // nothing left to release

    // A different publisher now takes the service over and keeps its id and items.
    ServiceEntry* taken = announce_ok(registry, "FEED", kSessionB);
    CHECK(taken == feed);
    CHECK(taken->id == 1);
    CHECK(taken->owner_session == kSessionB);
    CHECK(taken->state == wire::SERVICE_UP);
    CHECK(registry.register_item(taken->id, "VOD.L") == item);
}

TEST_CASE("max_services refuses new services", "[item_registry]") {
    ItemRegistry registry(0, 2, 100);
    announce_ok(registry, "S1", kSessionA);
    announce_ok(registry, "S2", kSessionA);
    ServiceEntry* out = nullptr;
    CHECK(registry.announce("S3", wire::SERVICE_BROADCAST, kSessionA, out) ==
          Announce::kLimitReached);
    CHECK(out == nullptr);
    CHECK(registry.service_count() == 2);
    CHECK(registry.service(std::string("S3")) == nullptr);
    // Existing services can still be announced (re-announce and takeover).
    announce_ok(registry, "S1", kSessionA);
    registry.release(kSessionA);
    announce_ok(registry, "S2", kSessionB);
}

TEST_CASE("register_item assigns stable ids", "[item_registry]") {
    ItemRegistry registry(0, 10, 100);
    const uint32_t svc = announce_ok(registry, "FEED", kSessionA)->id;
    ItemEntry* a = registry.register_item(svc, "A");
    ItemEntry* b = registry.register_item(svc, "B");
    REQUIRE(a != nullptr);
    REQUIRE(b != nullptr);
    CHECK(a->id == 1);
    CHECK(b->id == 2);
    CHECK(a->service_id == svc);
    CHECK(a->name == "A");
    CHECK_FALSE(a->has_image);
    CHECK(a->item_seq == 0);

    // Registering the same (service, name) again returns the same entry.
    CHECK(registry.register_item(svc, "A") == a);
    CHECK(registry.register_item(svc, "A")->id == 1);
    CHECK(registry.item_count() == 2);
    CHECK(registry.service(svc)->item_count == 2);  // counted once per item

    CHECK(registry.item(1) == a);
    CHECK(registry.item(2) == b);
    CHECK(registry.item(3) == nullptr);
    CHECK(registry.item(0) == nullptr);
    // The same item number under another distributor id is another item.
    CHECK(registry.item(mdcast::proto::make_item_id(7, 1)) == nullptr);
    CHECK(registry.find_item(svc, "B") == b);
    CHECK(registry.find_item(svc, "C") == nullptr);
}

TEST_CASE("the same name in different services gets distinct ids", "[item_registry]") {
    ItemRegistry registry(0, 10, 100);
    const uint32_t s1 = announce_ok(registry, "FEED1", kSessionA)->id;
    const uint32_t s2 = announce_ok(registry, "FEED2", kSessionB)->id;
    ItemEntry* one = registry.register_item(s1, "VOD.L");
    ItemEntry* two = registry.register_item(s2, "VOD.L");
    REQUIRE(one != nullptr);
    REQUIRE(two != nullptr);
    CHECK(one != two);
    CHECK(one->id != two->id);
    CHECK(registry.find_item(s1, "VOD.L") == one);
    CHECK(registry.find_item(s2, "VOD.L") == two);
    CHECK(registry.service(s1)->item_count == 1);
    CHECK(registry.service(s2)->item_count == 1);
}

TEST_CASE("service and item name keys do not collide", "[item_registry]") {
    ItemRegistry registry(0, 20, 100);
    for (int i = 1; i <= 12; ++i) announce_ok(registry, "S" + std::to_string(i), kSessionA);
    // service 1 + "2X" and service 12 + "X" must be different items.
    ItemEntry* a = registry.register_item(1, "2X");
    ItemEntry* b = registry.register_item(12, "X");
    REQUIRE(a != nullptr);
    REQUIRE(b != nullptr);
    CHECK(a != b);
}

TEST_CASE("max_items refuses new items but returns existing ones", "[item_registry]") {
    ItemRegistry registry(0, 10, 3);
    const uint32_t svc = announce_ok(registry, "FEED", kSessionA)->id;
    for (const char* name : {"A", "B", "C"}) REQUIRE(registry.register_item(svc, name) != nullptr);
    CHECK(registry.register_item(svc, "D") == nullptr);
    CHECK(registry.item_count() == 3);
    CHECK(registry.service(svc)->item_count == 3);
    CHECK(registry.find_item(svc, "D") == nullptr);
    // Existing items are still found at the limit.
    ItemEntry* b = registry.register_item(svc, "B");
    REQUIRE(b != nullptr);
    CHECK(b->id == 2);
    // The limit counts items across all services.
    const uint32_t other = announce_ok(registry, "OTHER", kSessionA)->id;
    CHECK(registry.register_item(other, "A") == nullptr);
}

TEST_CASE("an item in an unknown service is refused", "[item_registry]") {
    ItemRegistry registry(0, 10, 100);
    CHECK(registry.register_item(1, "A") == nullptr);
    announce_ok(registry, "FEED", kSessionA);
    CHECK(registry.register_item(0, "A") == nullptr);
    CHECK(registry.register_item(2, "A") == nullptr);
    CHECK(registry.item_count() == 0);
}

TEST_CASE("mark_service_items_suspect affects only that service", "[item_registry]") {
    ItemRegistry registry(0, 10, 100);
    const uint32_t s1 = announce_ok(registry, "FEED1", kSessionA)->id;
    const uint32_t s2 = announce_ok(registry, "FEED2", kSessionB)->id;
    ItemEntry* a = registry.register_item(s1, "A");
    ItemEntry* b = registry.register_item(s1, "B");
    ItemEntry* c = registry.register_item(s2, "C");
    for (ItemEntry* e : {a, b, c}) {
        e->data_state = wire::DATA_OK;
        e->has_image = true;
    }
    registry.mark_service_items_suspect(s1);
    CHECK(a->data_state == wire::DATA_SUSPECT);
    CHECK(b->data_state == wire::DATA_SUSPECT);
    CHECK(a->status_code == wire::STATUS_SOURCE_DOWN);
    CHECK(b->status_text == "service FEED1 is down: its source went away");
    CHECK(c->data_state == wire::DATA_OK);
    CHECK(c->status_code == wire::STATUS_NONE);
    registry.mark_service_items_suspect(999);  // unknown service: no effect, no crash
    CHECK(c->data_state == wire::DATA_OK);
}

TEST_CASE("directory lists every service with its state and item count", "[item_registry]") {
    ItemRegistry registry(0, 10, 100);
    CHECK(registry.directory().services_size() == 0);
    const uint32_t s1 = announce_ok(registry, "FEED1", kSessionA)->id;
    announce_ok(registry, "FEED2", kSessionB, wire::SERVICE_INTERACTIVE);
    registry.register_item(s1, "A");
    registry.register_item(s1, "B");
    registry.release(kSessionB);

    const wire::Directory directory = registry.directory();
    REQUIRE(directory.services_size() == 2);
    const auto& first = directory.services(0);
    CHECK(first.service_id() == 1);
    CHECK(first.name() == "FEED1");
    CHECK(first.state() == wire::SERVICE_UP);
    CHECK(first.mode() == wire::SERVICE_BROADCAST);
    CHECK(first.item_count() == 2);
    const auto& second = directory.services(1);
    CHECK(second.service_id() == 2);
    CHECK(second.name() == "FEED2");
    CHECK(second.state() == wire::SERVICE_DOWN);
    CHECK(second.mode() == wire::SERVICE_INTERACTIVE);
    CHECK(second.item_count() == 0);
}

TEST_CASE("ids carry the distributor id in their top bits", "[item_registry]") {
    ItemRegistry registry(7, 10, 100);
    ServiceEntry* service = nullptr;
    REQUIRE(registry.announce("FEED", mdcast::wire::v1::SERVICE_BROADCAST, 1, service) ==
            ItemRegistry::AnnounceResult::kAccepted);
    CHECK(service->id == (7u << 16 | 1));
    CHECK(mdcast::proto::service_source(service->id) == 7);
    ItemEntry* item = registry.register_item(service->id, "VOD.L");
    REQUIRE(item != nullptr);
    CHECK(item->id == (uint64_t{7} << 40 | 1));
    CHECK(mdcast::proto::item_source(item->id) == 7);
    CHECK(registry.service(1) == nullptr);  // another distributor's service number 1
    CHECK(registry.service(service->id) == service);
}

TEST_CASE("item ids carry the distributor id and are found by it", "[item_registry]") {
    ItemRegistry registry(7, 10, 100);
    const uint32_t svc = announce_ok(registry, "FEED", kSessionA)->id;
    std::vector<uint64_t> registered;
    for (const char* name : {"A", "B"}) registered.push_back(registry.register_item(svc, name)->id);
    CHECK(registered == std::vector<uint64_t>{mdcast::proto::make_item_id(7, 1),
                                              mdcast::proto::make_item_id(7, 2)});
    CHECK(registry.item(registered[1])->name == "B");
    CHECK(registry.item(1) == nullptr);  // distributor 0's item 1
    CHECK(registry.item(mdcast::proto::make_item_id(7, 3)) == nullptr);
    std::vector<uint64_t> seen;
    registry.for_each_item([&](const ItemEntry& item) { seen.push_back(item.id); });
    CHECK(seen == registered);
}

TEST_CASE("new items make the directory due again, once per burst", "[item_registry]") {
    ItemRegistry registry(0, 10, 100);
    ServiceEntry* feed = announce_ok(registry, "FEED", kSessionA);
    CHECK_FALSE(registry.take_counts_changed());  // the announcement's directory is current
    REQUIRE(registry.register_item(feed->id, "A") != nullptr);
    REQUIRE(registry.register_item(feed->id, "B") != nullptr);
    CHECK(registry.take_counts_changed());
    CHECK_FALSE(registry.take_counts_changed());
    REQUIRE(registry.register_item(feed->id, "A") != nullptr);  // known already: no change
    CHECK_FALSE(registry.take_counts_changed());
    CHECK(registry.directory().services(0).item_count() == 2);
}

TEST_CASE("a released item's name, id and slot go, the slot comes back under a new id",
          "[item_registry]") {
    ItemRegistry registry(3, 4, 2);
    ServiceEntry* service = nullptr;
    REQUIRE(registry.announce("ASK", mdcast::wire::v1::SERVICE_INTERACTIVE, 1, service) ==
            Announce::kAccepted);
    ItemEntry* a = registry.register_item(service->id, "A");
    ItemEntry* b = registry.register_item(service->id, "B");
    REQUIRE((a && b));
    CHECK(registry.register_item(service->id, "C") == nullptr);  // max_items 2
    const uint64_t old_id = a->id;
    CHECK(old_id == mdcast::proto::make_item_id(3, 1));  // the first generation: as before
    CHECK(registry.release_item(old_id));
    CHECK_FALSE(registry.release_item(old_id));
    CHECK(registry.item(old_id) == nullptr);
    CHECK(registry.find_item(service->id, "A") == nullptr);
    CHECK(registry.item_count() == 1);
    CHECK(service->item_count == 1);
    CHECK(registry.items_released() == 1);
    ItemEntry* c = registry.register_item(service->id, "C");
    REQUIRE(c);
    CHECK(c->id != old_id);
    CHECK(mdcast::proto::item_source(c->id) == 3);
    CHECK(registry.item(c->id) == c);
    CHECK(registry.item(old_id) == nullptr);  // the old id never finds the new name
    CHECK(registry.item(b->id) == b);
    int visited = 0;
    registry.for_each_item([&](const ItemEntry&) { ++visited; });
    CHECK(visited == 2);
}
