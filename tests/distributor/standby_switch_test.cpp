// standby_switch.h: moving a service's items to a standby publisher. Equal
// values: nothing sent, the sequence carried on through the shift; different
// values: one unsolicited refresh at the item's next sequence; no image at the
// standby: an open/suspect status naming why. Checked on what a real loopback
// backbone carried.
#include "distributor/standby_switch.h"

#include <catch2/catch.hpp>

#include "rooms_fixture.h"

using namespace mdcast::distributor;
namespace proto = mdcast::proto;
namespace wire = mdcast::wire::v1;
using mdcast::distributor::testing::RoomsFixture;
using proto::FrameType;

namespace {

proto::FieldImage image_of(int64_t bid) {
    wire::FieldList list;
    auto* field = list.add_fields();
    field->set_id(22);
    field->set_int_value(bid);
    proto::FieldImage image;
    image.assign(list);
    return image;
}

StandbyItem standby_item(int64_t bid, uint64_t seq) {
    StandbyItem item;
    item.image = image_of(bid);
    item.item_seq = seq;
    item.has_image = true;
    item.data_state = wire::DATA_OK;
    return item;
}

ItemEntry backbone_item(int64_t bid, uint64_t seq) {
    ItemEntry item;
    item.image = image_of(bid);
    item.item_seq = seq;
    item.has_image = true;
    item.data_state = wire::DATA_OK;
    return item;
}

}  // namespace

TEST_CASE("equal values: nothing to send, the standby's sequence is shifted on",
          "[standby_switch]") {
    ItemEntry item = backbone_item(100, 50);
    const StandbyItem standby = standby_item(100, 7);
    CHECK(hand_over_item(item, &standby) == ItemHandover::kEqual);
    CHECK(item.item_seq == 50);
    CHECK(standby.item_seq + 1 + item.seq_shift == 51);  // its next update is the item's next
}

TEST_CASE("different values: a refresh at the next sequence, then the standby's updates follow",
          "[standby_switch]") {
    ItemEntry item = backbone_item(100, 50);
    const StandbyItem standby = standby_item(101, 90);  // ahead of the active one
    CHECK(hand_over_item(item, &standby) == ItemHandover::kRefresh);
    CHECK(item.item_seq == 51);
    CHECK(proto::same_values(item.image, standby.image));
    CHECK(standby.item_seq + 1 + item.seq_shift == 52);  // "negative" shift, mod 2^64
}

TEST_CASE("no image at the standby: suspect, realigned by its first refresh", "[standby_switch]") {
    ItemEntry item = backbone_item(100, 50);
    CHECK(hand_over_item(item, nullptr) == ItemHandover::kMissing);
    CHECK(item.data_state == wire::DATA_SUSPECT);
    CHECK(item.status_code == wire::STATUS_SOURCE_DOWN);
    CHECK(item.realign_seq);
    StandbyItem closed = standby_item(100, 3);
    closed.closed = true;
    ItemEntry other = backbone_item(100, 50);
    CHECK(hand_over_item(other, &closed) == ItemHandover::kMissing);
    ItemEntry never = ItemEntry{};
    CHECK(hand_over_item(never, nullptr) == ItemHandover::kNone);
}

TEST_CASE("same_values ignores field order, not kinds or values", "[standby_switch]") {
    wire::FieldList ab, ba;
    for (auto [list, first] : {std::pair{&ab, 1}, std::pair{&ba, 2}}) {
        for (int id : {first, 3 - first}) {
            auto* f = list->add_fields();
            f->set_id(static_cast<uint32_t>(id));
            f->set_string_value("v" + std::to_string(id));
        }
    }
    proto::FieldImage a, b;
    a.assign(ab);
    b.assign(ba);
    CHECK(proto::same_values(a, b));
    CHECK_FALSE(proto::same_values(a, image_of(1)));
    CHECK_FALSE(proto::same_values(image_of(1), image_of(2)));
}

TEST_CASE("a switch sends one message per item that needs one", "[standby_switch]") {
    RoomsFixture f;
    ServiceEntry& service = f.service("FEED", wire::SERVICE_BROADCAST);
    ItemEntry& same = f.imaged_item(service, "SAME");
    ItemEntry& moved = f.imaged_item(service, "MOVED");
    ItemEntry& lacking = f.imaged_item(service, "LACKING");
    for (ItemEntry* item : {&same, &moved, &lacking}) item->image = image_of(100);
    GroupMember to;
    to.items[same.id] = standby_item(100, 20);
    to.items[moved.id] = standby_item(105, 20);
    GroupSwitch done;
    switch_items(f.registry(), f.backbone(), service, to, "service FEED switched (test)", done);
    CHECK(done.items_equal == 1);
    CHECK(done.items_refreshed == 1);
    CHECK(done.items_missing == 1);
    const auto messages = f.backbone_messages();
    REQUIRE(messages.size() == 2);
    for (const auto& message : messages) {
        if (message.type == FrameType::kRefresh) {
            wire::Refresh refresh;
            REQUIRE(refresh.ParseFromString(message.body));
            CHECK(refresh.item_id() == moved.id);
            CHECK(refresh.item_seq() == 4);  // the fixture's items are at 3
            CHECK_FALSE(refresh.solicited());
            CHECK(refresh.status().data_state() == wire::DATA_OK);
            CHECK(refresh.fields().fields(0).int_value() == 105);
        } else {
            REQUIRE(message.type == FrameType::kItemStatus);
            wire::ItemStatus status;
            REQUIRE(status.ParseFromString(message.body));
            CHECK(status.item_id() == lacking.id);
            CHECK(status.status().data_state() == wire::DATA_SUSPECT);
            CHECK(status.status().stream_state() == wire::STREAM_OPEN);
            CHECK(status.status().text() ==
                  "service FEED switched (test), which does not publish this item");
        }
    }
}

TEST_CASE("a demoted active publisher keeps its own sequence as a standby", "[standby_switch]") {
    RoomsFixture f;
    ServiceEntry& service = f.service("FEED", wire::SERVICE_BROADCAST);
    ItemEntry& item = f.imaged_item(service, "A");
    item.seq_shift = 10;  // the backbone is 10 ahead of this publisher
    GroupMember demoted;
    keep_as_standby(f.registry(), service.id, demoted);
    REQUIRE(demoted.items.count(item.id) == 1);
    CHECK(demoted.items[item.id].item_seq + 10 == 3);  // mod 2^64, as it is applied
    CHECK(demoted.items[item.id].has_image);
}
