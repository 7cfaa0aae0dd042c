// InterestLeases over a real registry and multicast backbone (rooms_fixture.h),
// sources recorded: Interest of another epoch ignored and counted; a server
// renews and releases only its own leases; a renewal of a dropped item asks the
// source again; items nobody wants are unsubscribed at their source (one call
// per source) and marked not current on the backbone; a source that announces
// again is asked for everything still wanted.
#include "distributor/interest_leases.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "rooms_fixture.h"

using namespace mdcast;
using mdcast::distributor::ItemEntry;
using mdcast::distributor::ServiceEntry;
using mdcast::distributor::testing::kMs;
using mdcast::distributor::testing::RoomsFixture;
namespace wire_v1 = mdcast::wire::v1;

namespace {

constexpr uint64_t kServerA = 0xa, kServerB = 0xb;

wire_v1::Interest interest(uint64_t epoch, std::vector<uint64_t> held,
                           std::vector<uint64_t> released = {}) {
    wire_v1::Interest message;
    message.set_epoch(epoch);
    for (uint64_t id : held) message.add_held_item_ids(id);
    for (uint64_t id : released) message.add_released_item_ids(id);
    return message;
}

// A metric of the leases' own, as /metrics reports it.
double metric(RoomsFixture& f, const std::string& name) {
    MetricsRegistry registry("test_");
    f.leases().register_metrics(registry);
    const std::string json = registry.json();
    const std::string key = "\"" + name + "\":";
    const size_t at = json.find(key);
    REQUIRE(at != std::string::npos);
    return std::stod(json.substr(at + key.size()));
}

// An interactive item `server` asked for (its source asked once).
ItemEntry& wanted_item(RoomsFixture& f, const ServiceEntry& service, const std::string& name,
                       uint64_t server) {
    ItemEntry* item = f.leases().ask_source(service, nullptr, name, server, f.now).item;
    REQUIRE(item);
    return *item;
}

}  // namespace

TEST_CASE("Interest of another epoch names other items: ignored and counted", "[interest_leases]") {
    RoomsFixture f;
    auto& service = f.service("ASK", wire_v1::SERVICE_INTERACTIVE);
    auto& item = wanted_item(f, service, "IBM.N", kServerA);
    f.leases().on_interest(interest(f.backbone().epoch() + 1, {}, {item.id}), kServerA, f.now);
    CHECK(f.leases().holders(item.id) == 1);
    CHECK(metric(f, "interest_other_epoch_total") == 1);
}

TEST_CASE("a server renews and releases only its own leases", "[interest_leases]") {
    RoomsFixture f;
    auto& service = f.service("ASK", wire_v1::SERVICE_INTERACTIVE);
    auto& item = wanted_item(f, service, "IBM.N", kServerA);
    const uint64_t epoch = f.backbone().epoch();
    f.leases().on_interest(interest(epoch, {item.id}), kServerB, f.now);
    CHECK(f.leases().holders(item.id) == 2);
    CHECK(f.asked == std::vector<std::string>{"IBM.N"});  // wanted already: not asked again
    f.leases().on_interest(interest(epoch, {}, {item.id}), kServerB, f.now);
    f.leases().on_interest(interest(epoch, {}, {item.id}), kServerB, f.now);  // again: no effect
    CHECK(f.leases().holders(item.id) == 1);
    f.leases().tick(f.now + 600 * kMs);  // past the hold: A still holds it
    CHECK(f.unsubscribed.empty());
}

TEST_CASE("an item nobody wants is unsubscribed at its source and no longer current",
          "[interest_leases]") {
    RoomsFixture f;
    auto& service = f.service("ASK", wire_v1::SERVICE_INTERACTIVE);
    auto& first = wanted_item(f, service, "IBM.N", kServerA);
    const uint64_t second = wanted_item(f, service, "MSFT.O", kServerA).id;
    first.has_image = true;
    f.backbone_messages();
    f.leases().on_interest(interest(f.backbone().epoch(), {}, {first.id, second}), kServerA, f.now);
    f.leases().tick(f.now + 100 * kMs);  // within the hold: kept
    CHECK(f.unsubscribed.empty());
    f.source_up = GENERATE(true, false);
    f.leases().tick(f.now + 600 * kMs);
    CHECK(first.unwanted);
    CHECK(first.data_state == wire_v1::DATA_SUSPECT);
    // The item its source never answered is released: no server holds an image of it.
    CHECK(f.registry().item(second) == nullptr);
    CHECK(f.registry().item_count() == 1);
    CHECK(metric(f, "interest_items_released_total") == 1);
    const auto messages = f.backbone_messages();
    REQUIRE(messages.size() == 1);  // an ItemStatus for the item servers hold, source or not
    wire_v1::ItemStatus status;
    REQUIRE(status.ParseFromString(messages[0].body));
    CHECK(status.status().code() == wire_v1::STATUS_RECOVERING);
    if (f.source_up) {
        REQUIRE(f.unsubscribed.size() == 1);  // one Unsubscribe for the source's items
        CHECK(f.unsubscribed[0].size() == 2);
        CHECK(metric(f, "unsubscribes_sent_total") == 2);
    } else {
        CHECK(metric(f, "unsubscribes_sent_total") == 0);
    }

    SECTION("a later renewal is new interest: the source is asked again") {
        f.source_up = true;
        f.asked.clear();
        f.leases().on_interest(interest(f.backbone().epoch(), {first.id}), kServerB,
                               f.now + 700 * kMs);
        CHECK(f.asked == std::vector<std::string>{"IBM.N"});
    }
}

TEST_CASE("a source that announces again is asked for every item still wanted",
          "[interest_leases]") {
    RoomsFixture f;
    auto& service = f.service("ASK", wire_v1::SERVICE_INTERACTIVE);
    wanted_item(f, service, "IBM.N", kServerA);
    wanted_item(f, service, "MSFT.O", kServerB);
    f.asked.clear();
    f.leases().on_service_announced(service, f.now + 10 * kMs);
    CHECK(f.asked.size() == 2);

    auto& broadcast = f.service("PUSH", wire_v1::SERVICE_BROADCAST);
    auto& pushed = f.imaged_item(broadcast, "EUR=");
    f.leases().on_interest(interest(f.backbone().epoch(), {pushed.id}), kServerA, f.now);
    CHECK(f.leases().holders(pushed.id) == 0);  // only interactive items take leases
}

TEST_CASE("names awaiting their source are bounded per service and in all",
          "[interest_leases][hardening]") {
    RoomsFixture f(3, 5);
    auto& ask = f.service("ASK", wire_v1::SERVICE_INTERACTIVE);
    auto& other = f.service("OTHER", wire_v1::SERVICE_INTERACTIVE);
    for (int i = 0; i < 3; ++i) wanted_item(f, ask, "N" + std::to_string(i), kServerA);
    auto refused = f.leases().ask_source(ask, nullptr, "N3", kServerA, f.now);
    CHECK(refused.item == nullptr);
    CHECK(refused.refusal.find("interactive.max_awaiting_per_service (3)") != std::string::npos);
    CHECK(f.registry().item_count() == 3);  // never registered
    // Another service has its own share, up to the total.
    wanted_item(f, other, "M0", kServerA);
    wanted_item(f, other, "M1", kServerA);
    refused = f.leases().ask_source(other, nullptr, "M2", kServerA, f.now);
    CHECK(refused.refusal.find("interactive.max_awaiting_items (5)") != std::string::npos);
    CHECK(metric(f, "interest_awaiting_items") == 5);
    CHECK(metric(f, "interest_awaiting_refused_total") == 2);
    // A name answered with an image awaits no more: room for a new one.
    f.registry().find_item(ask.id, "N0")->has_image = true;
    CHECK(f.leases().ask_source(ask, nullptr, "N3", kServerA, f.now).item != nullptr);
    // A broadcast publisher still registers whatever the interactive services await.
    auto& push = f.service("PUSH", wire_v1::SERVICE_BROADCAST);
    CHECK(f.registry().register_item(push.id, "EUR=") != nullptr);
}

TEST_CASE("a flood of names nobody answers leaves the registry as it found it",
          "[interest_leases][hardening]") {
    RoomsFixture f(1000, 1000);
    auto& ask = f.service("ASK", wire_v1::SERVICE_INTERACTIVE);
    std::vector<uint64_t> ids;
    for (int round = 0; round < 3; ++round) {
        // 90 names (the registry holds 100), asked once and then forgotten by the asker.
        for (int i = 0; i < 90; ++i) {
            const std::string name = "BOGUS" + std::to_string(round) + "." + std::to_string(i);
            ids.push_back(wanted_item(f, ask, name, kServerA).id);
        }
        CHECK(f.registry().item_count() == 90);
        // Leases run out (10 s) and the hold (0.5 s) passes: every name is released.
        f.now += 11'000 * kMs;
        f.leases().tick(f.now);
        f.now += 600 * kMs;
        f.leases().tick(f.now);
        CHECK(f.registry().item_count() == 0);
        CHECK(metric(f, "interest_awaiting_items") == 0);
    }
    // Slots were used again, under new ids: no id was given twice.
    std::sort(ids.begin(), ids.end());
    CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());
    for (uint64_t id : ids) CHECK(f.registry().item(id) == nullptr);
    auto& push = f.service("PUSH", wire_v1::SERVICE_BROADCAST);
    CHECK(f.registry().register_item(push.id, "EUR=") != nullptr);
}
