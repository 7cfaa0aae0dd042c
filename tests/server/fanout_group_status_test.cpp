// Tests for Fanout::fan_out_group_status (server/fanout.h): one GroupStatus per
// client that takes them, per-item statuses to the others, after what a paced
// subscription owes, and a conflating client brought level item by item.
// Real ClientSessions over socketpairs (client_fixture.h).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "client_fixture.h"
#include "common/clock.h"
#include "server/fanout.h"
#include "server/make_status.h"

namespace {

namespace proto = mdcast::proto;
using mdcast::server::CachedItem;
using mdcast::server::ClientSession;
using mdcast::server::Fanout;
using mdcast::server::ItemCache;
using mdcast::server::testing::ClientFixture;
using mdcast::server::testing::ReceivedFrame;
namespace wire = mdcast::wire::v1;
using proto::FrameType;

constexpr uint32_t kService = 7;

// A cache of `count` items (ids 1..count) of service kService, with images.
struct Items {
    ItemCache cache{1024, 1000};
    std::vector<CachedItem*> all;
    explicit Items(uint64_t count) {
        for (uint64_t id = 1; id <= count; ++id) {
            wire::Refresh r;
            r.set_item_id(id);
            r.set_item_seq(1);
            r.set_service_id(kService);
            r.set_service_name("SVC");
            r.set_item_name("ITEM" + std::to_string(id));
            r.mutable_status()->set_stream_state(wire::STREAM_OPEN);
            r.mutable_status()->set_data_state(wire::DATA_OK);
            auto* f = r.mutable_fields()->add_fields();
            f->set_id(22);
            f->set_int_value(static_cast<int64_t>(id));
            CachedItem* item = nullptr;
            REQUIRE(cache.apply_refresh(r, item) == ItemCache::Outcome::kApplied);
            all.push_back(item);
        }
    }
    // Every item goes down with the same status, as Server::on_directory does;
    // returns the group message for them.
    wire::GroupStatus go_down() {
        for (CachedItem* item : all) {
            ItemCache::invalidate(*item, wire::STATUS_SOURCE_DOWN, "service SVC is down");
        }
        wire::GroupStatus message;
        message.set_scope(wire::GROUP_SERVICE);
        message.set_id(kService);
        message.set_service_name("SVC");
        *message.mutable_status() = all.front()->status;
        return message;
    }
    std::vector<const CachedItem*> subset(size_t first, size_t count) const {
        return {all.begin() + static_cast<long>(first),
                all.begin() + static_cast<long>(first + count)};
    }
};

size_t count_of(const std::vector<ReceivedFrame>& frames, FrameType type) {
    size_t n = 0;
    for (const auto& frame : frames) n += frame.type == type;
    return n;
}

}  // namespace

TEST_CASE("a group status is one frame per grouped client, item statuses to older clients",
          "[fanout][group]") {
    ClientFixture clients;
    Items items(50);
    Fanout fanout(items.cache, clients.loop());
    ClientSession& grouped = clients.connect_grouped();
    ClientSession& older = clients.connect();
    ClientSession& elsewhere = clients.connect_grouped();  // holds none of the items told
    for (uint64_t id = 1; id <= 40; ++id) {
        fanout.subscribe(grouped, id, id % 2 ? std::vector<uint32_t>{} : std::vector<uint32_t>{22});
        fanout.subscribe(older, id, {});
    }
    fanout.subscribe(elsewhere, 50, {});

    fanout.fan_out_group_status(items.go_down(), items.subset(0, 45));

    const auto to_grouped = clients.received(grouped);
    REQUIRE(to_grouped.size() == 1);
    REQUIRE(to_grouped[0].type == FrameType::kGroupStatus);
    wire::GroupStatus group;
    REQUIRE(group.ParseFromString(to_grouped[0].body));
    CHECK(group.scope() == wire::GROUP_SERVICE);
    CHECK(group.id() == kService);
    CHECK(group.item_count() == 40);
    CHECK(group.status().stream_state() == wire::STREAM_OPEN);
    CHECK(group.status().data_state() == wire::DATA_SUSPECT);
    CHECK(group.status().code() == wire::STATUS_SOURCE_DOWN);
    CHECK(group.status().text() == "service SVC is down");

    const auto to_older = clients.received(older);
    REQUIRE(to_older.size() == 40);
    CHECK(count_of(to_older, FrameType::kItemStatus) == 40);
    wire::ItemStatus status;
    REQUIRE(status.ParseFromString(to_older[0].body));
    CHECK(status.status().SerializeAsString() == group.status().SerializeAsString());

    CHECK(clients.received(elsewhere).empty());
    CHECK(fanout.counters().group_statuses_out == 1);
    CHECK(fanout.counters().group_status_items == 40);
    CHECK(fanout.counters().statuses_out == 40);
}

TEST_CASE("a paced subscription's owed update goes out before the group status",
          "[fanout][group][conflation]") {
    ClientFixture clients;
    Items items(3);
    Fanout fanout(items.cache, clients.loop());
    ClientSession& paced = clients.connect_grouped();
    for (uint64_t id = 1; id <= 3; ++id) fanout.subscribe(paced, id, {}, 60'000);

    for (uint64_t seq = 2; seq <= 3; ++seq) {  // the first at once, the second held
        proto::UpdateView update;
        update.item_id = 2;
        update.item_seq = seq;
        update.fields.push_back(
            proto::FieldEntry{22, proto::FieldKind::kInt, 0, static_cast<int64_t>(seq), 0, {}});
        CachedItem* item = nullptr;
        REQUIRE(items.cache.apply_update(update, item) == ItemCache::Outcome::kApplied);
        std::string whole;
        proto::append_update_frame(whole, update);
        fanout.fan_out_update(*item, update,
                              {reinterpret_cast<const uint8_t*>(whole.data()), whole.size()});
    }
    REQUIRE(clients.received(paced).size() == 1);
    REQUIRE(fanout.paced_waiting() == 1);

    fanout.fan_out_group_status(items.go_down(), items.subset(0, 3));
    const auto got = clients.received(paced);
    REQUIRE(got.size() == 2);
    CHECK(got[0].type == FrameType::kUpdate);
    proto::UpdateView owed;
    REQUIRE(proto::decode_update(
        {reinterpret_cast<const uint8_t*>(got[0].body.data()), got[0].body.size()}, owed));
    CHECK(owed.item_id == 2);
    CHECK(owed.item_seq == 3);
    CHECK(got[1].type == FrameType::kGroupStatus);
    CHECK(fanout.counters().paced_flushed == 1);
}

TEST_CASE("a conflating grouped client is owed each item's status and drains level",
          "[fanout][group][conflation]") {
    ClientFixture clients;
    Items items(20);
    Fanout fanout(items.cache, clients.loop());
    ClientSession& slow = clients.connect_grouped(true, 300);
    clients.on_drained = [&](ClientSession& c) { fanout.drain(c); };
    for (uint64_t id = 1; id <= 20; ++id) fanout.subscribe(slow, id, {});
    // Fill the queue with images until the client conflates.
    for (size_t i = 0; !slow.conflating(); ++i) {
        REQUIRE(i < 100);
        fanout.fan_out_image(*items.all[i % 20], &items.all[i % 20]->image);
    }

    fanout.fan_out_group_status(items.go_down(), items.subset(0, 20));
    CHECK(fanout.counters().group_status_items == 20);

    std::vector<ReceivedFrame> got;
    for (int round = 0; round < 50 && slow.conflating(); ++round) {
        for (auto& frame : clients.received(slow)) got.push_back(std::move(frame));
    }
    for (auto& frame : clients.received(slow)) got.push_back(std::move(frame));
    CHECK_FALSE(slow.conflating());
    CHECK(clients.closes.empty());
    // The group frame could not be queued: every item's status came from the
    // cache instead, the last frame for each item.
    CHECK(count_of(got, FrameType::kGroupStatus) == 0);
    std::vector<bool> told(21, false);
    for (const auto& frame : got) {
        if (frame.type != FrameType::kItemStatus) continue;
        wire::ItemStatus status;
        REQUIRE(status.ParseFromString(frame.body));
        CHECK(status.status().code() == wire::STATUS_SOURCE_DOWN);
        told.at(status.item_id()) = true;
    }
    for (uint64_t id = 1; id <= 20; ++id) CHECK(told[id]);
}

TEST_CASE("a grouped client whose queue is full under the disconnect policy is closed",
          "[fanout][group]") {
    ClientFixture clients;
    Items items(20);
    Fanout fanout(items.cache, clients.loop());
    ClientSession& slow = clients.connect_grouped(false, 300);
    for (uint64_t id = 1; id <= 20; ++id) fanout.subscribe(slow, id, {});
    for (size_t i = 0; clients.closes.empty() && i < 100; ++i) {
        // Images until the queue refuses one: that closes it as a slow consumer.
        if (i < 2)
            fanout.fan_out_image(*items.all[i], &items.all[i]->image);
        else
            fanout.fan_out_group_status(items.go_down(), items.subset(0, 20));
    }
    REQUIRE(clients.closes.size() == 1);
    CHECK(clients.closes[0] == mdcast::CloseReason::kSlowConsumer);
}
