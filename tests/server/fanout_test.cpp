// Tests for server/fanout.h: the subscription book kept in both directions,
// the same bytes to every subscriber without a view, one encoding per distinct
// view, statuses and images, and the conflation drain. Real ClientSessions over
// socketpairs (client_fixture.h).
#include "server/fanout.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "client_fixture.h"
#include "common/clock.h"
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

wire::Refresh make_refresh(uint64_t id, uint64_t seq, const std::string& name) {
    wire::Refresh r;
    r.set_item_id(id);
    r.set_item_seq(seq);
    r.set_service_id(1);
    r.set_service_name("SVC");
    r.set_item_name(name);
    r.mutable_status()->set_stream_state(wire::STREAM_OPEN);
    r.mutable_status()->set_data_state(wire::DATA_OK);
    for (uint32_t field : {22u, 30u, 32u}) {
        auto* f = r.mutable_fields()->add_fields();
        f->set_id(field);
        f->set_int_value(field * 100);
    }
    return r;
}

proto::UpdateView make_update(uint64_t id, uint64_t seq, std::vector<uint32_t> fields) {
    proto::UpdateView u;
    u.item_id = id;
    u.item_seq = seq;
    for (uint32_t field : fields) {
        u.fields.push_back(proto::FieldEntry{
            field, proto::FieldKind::kInt, 0, static_cast<int64_t>(seq * 1000 + field), 0, {}});
    }
    return u;
}

// A cache holding items 1 ("A") and 2 ("B") with images.
struct Items {
    ItemCache cache{64, 100};
    CachedItem* a = nullptr;
    CachedItem* b = nullptr;
    Items() {
        REQUIRE(cache.apply_refresh(make_refresh(1, 1, "A"), a) == ItemCache::Outcome::kApplied);
        REQUIRE(cache.apply_refresh(make_refresh(2, 1, "B"), b) == ItemCache::Outcome::kApplied);
    }
    // Applies the update to the cache and fans it out as it came "from the backbone".
    void update(Fanout& fanout, const proto::UpdateView& update) {
        CachedItem* item = nullptr;
        REQUIRE(cache.apply_update(update, item) == ItemCache::Outcome::kApplied);
        std::string whole;
        proto::append_update_frame(whole, update);
        fanout.fan_out_update(*item, update,
                              {reinterpret_cast<const uint8_t*>(whole.data()), whole.size()});
    }
};

std::vector<uint32_t> field_ids(const ReceivedFrame& frame) {
    proto::UpdateView view;
    REQUIRE(proto::decode_update(
        {reinterpret_cast<const uint8_t*>(frame.body.data()), frame.body.size()}, view));
    std::vector<uint32_t> ids;
    for (const auto& f : view.fields) ids.push_back(f.id);
    return ids;
}

}  // namespace

TEST_CASE("the book is kept in both directions", "[fanout]") {
    ClientFixture clients;
    Items items;
    Fanout fanout(items.cache, clients.loop());
    ClientSession& x = clients.connect();
    ClientSession& y = clients.connect();

    CHECK(fanout.subscribe(x, 1, {}));
    CHECK(fanout.subscribe(x, 2, {22}));
    CHECK_FALSE(fanout.subscribe(x, 1, {30}));  // already held, in another view: no change
    CHECK(fanout.subscribe(y, 1, {22}));
    CHECK(fanout.subscription_count(x) == 2);
    CHECK(fanout.subscription_count(y) == 1);
    REQUIRE(fanout.subscriptions_of(x) != nullptr);
    CHECK(fanout.subscriptions_of(x)->at(1).empty());
    CHECK(fanout.subscriptions_of(x)->at(2) == std::vector<uint32_t>{22});
    CHECK(fanout.subscribed_item_count() == 2);

    CHECK(fanout.unsubscribe(x, 2));
    CHECK_FALSE(fanout.unsubscribe(x, 2));
    CHECK_FALSE(fanout.has_subscribers(2));
    CHECK(fanout.subscription_count(x) == 1);

    const auto taken = fanout.take_item(1);
    CHECK(taken.size() == 2);
    CHECK(fanout.subscription_count(x) == 0);
    CHECK(fanout.subscription_count(y) == 0);
    CHECK(fanout.subscriptions_of(x) == nullptr);
    CHECK(fanout.subscribed_item_count() == 0);

    fanout.subscribe(x, 1, {});
    fanout.subscribe(x, 2, {});
    fanout.subscribe(y, 2, {});
    fanout.drop_client(x);
    CHECK(fanout.subscription_count(x) == 0);
    CHECK_FALSE(fanout.has_subscribers(1));
    CHECK(fanout.has_subscribers(2));
    CHECK(fanout.subscribed_items() == std::vector<uint64_t>{2});
}

TEST_CASE("an update: the backbone's bytes without a view, one encoding per view", "[fanout]") {
    ClientFixture clients;
    Items items;
    Fanout fanout(items.cache, clients.loop());
    ClientSession& whole = clients.connect();
    ClientSession& bid = clients.connect();
    ClientSession& also_bid = clients.connect();
    ClientSession& other = clients.connect();
    fanout.subscribe(whole, 1, {});
    fanout.subscribe(bid, 1, {22});
    fanout.subscribe(also_bid, 1, {22});
    fanout.subscribe(other, 2, {});

    const auto update = make_update(1, 2, {22, 30});
    std::string expected;
    proto::append_update_frame(expected, update);
    items.update(fanout, update);

    const auto got_whole = clients.received(whole);
    REQUIRE(got_whole.size() == 1);
    CHECK(got_whole[0].whole == expected);  // the same bytes, not re-encoded
    for (ClientSession* client : {&bid, &also_bid}) {
        const auto got = clients.received(*client);
        REQUIRE(got.size() == 1);
        CHECK(got[0].type == FrameType::kUpdate);
        CHECK(field_ids(got[0]) == std::vector<uint32_t>{22});
    }
    CHECK(clients.received(other).empty());
    CHECK(fanout.counters().updates_out == 3);

    // An update touching none of a view's fields is not sent to that view.
    items.update(fanout, make_update(1, 3, {30}));
    CHECK(clients.received(whole).size() == 1);
    CHECK(clients.received(bid).empty());
    CHECK(fanout.counters().updates_out == 4);
}

TEST_CASE("a group's updates are stored once and every subscriber gets the same stream",
          "[fanout][shared_block]") {
    const size_t live = mdcast::SharedBlock::live_blocks();
    ClientFixture clients;
    Items items;
    Fanout fanout(items.cache, clients.loop());
    ClientSession& one = clients.connect();
    ClientSession& two = clients.connect();
    ClientSession& bid = clients.connect();  // a view of its own: a group of one, copied
    for (ClientSession* client : {&one, &two}) {
        fanout.subscribe(*client, 1, {});
        fanout.subscribe(*client, 2, {});
    }
    fanout.subscribe(bid, 1, {22});

    std::vector<std::string> expected;   // the frames `one` and `two` must get, in order
    for (uint64_t n = 0; n < 40; ++n) {  // items 2 and 1 in turn, each in sequence from 2
        const auto update = make_update(n % 2 == 0 ? 2 : 1, 2 + n / 2, {22, 30, 32});
        std::string frame;
        proto::append_update_frame(frame, update);
        expected.push_back(frame);
        items.update(fanout, update);
        if (n == 19) {  // a status in the middle keeps its place
            fanout.fan_out_status(*items.b);
            expected.push_back(Fanout::status_frame(*items.b));
        }
    }
    CHECK(fanout.counters().shared_updates == 40);  // once per update, not per client
    for (ClientSession* client : {&one, &two}) {
        const auto got = clients.received(*client);
        REQUIRE(got.size() == expected.size());
        for (size_t i = 0; i < got.size(); ++i) CHECK(got[i].whole == expected[i]);
        // Two runs (before and after the status), each queued as one reference.
        CHECK(client->connection().runs_referenced() == 2);
    }
    CHECK(clients.received(bid).size() == 20);
    CHECK(fanout.counters().updates_out == 100);
    // Everything is written: only the writer's current block is left.
    CHECK(mdcast::SharedBlock::live_blocks() == live + 1);
}

TEST_CASE("a slow consumer sharing a group meets its policy, the others get every update",
          "[fanout][shared_block]") {
    ClientFixture clients;
    Items items;
    Fanout fanout(items.cache, clients.loop());
    ClientSession& fast = clients.connect();
    ClientSession& slow = clients.connect(false, 600);  // disconnect policy, a small queue
    ClientSession& conflating = clients.connect(true, 600);
    for (ClientSession* client : {&fast, &slow, &conflating}) fanout.subscribe(*client, 1, {});
    for (uint64_t seq = 2; seq < 52; ++seq) items.update(fanout, make_update(1, seq, {30}));
    CHECK(fanout.counters().shared_updates == 50);
    CHECK_FALSE(slow.is_open());
    REQUIRE(clients.closes.size() == 1);
    CHECK(clients.closes[0] == mdcast::CloseReason::kSlowConsumer);
    CHECK(conflating.conflating());
    CHECK(conflating.connection().queued_bytes() <= 600);  // charged like copies
    CHECK(clients.received(fast).size() == 50);
}

TEST_CASE("statuses and images reach every subscriber, images per view", "[fanout]") {
    ClientFixture clients;
    Items items;
    Fanout fanout(items.cache, clients.loop());
    ClientSession& whole = clients.connect();
    ClientSession& bid = clients.connect();
    fanout.subscribe(whole, 1, {});
    fanout.subscribe(bid, 1, {22});

    ItemCache::invalidate(*items.a, wire::STATUS_UNRECOVERABLE_LOSS, "lost");
    fanout.fan_out_status(*items.a);
    for (ClientSession* client : {&whole, &bid}) {
        const auto got = clients.received(*client);
        REQUIRE(got.size() == 1);
        wire::ItemStatus status;
        REQUIRE(status.ParseFromString(got[0].body));
        CHECK(status.item_id() == 1);
        CHECK(status.status().data_state() == wire::DATA_SUSPECT);
        CHECK(status.status().code() == wire::STATUS_UNRECOVERABLE_LOSS);
    }
    CHECK(fanout.counters().statuses_out == 2);

    fanout.fan_out_image(*items.a, &items.a->image);
    wire::Refresh refresh;
    auto got = clients.received(whole);
    REQUIRE(got.size() == 1);
    REQUIRE(refresh.ParseFromString(got[0].body));
    CHECK(refresh.fields().fields_size() == 3);
    CHECK_FALSE(refresh.solicited());
    got = clients.received(bid);
    REQUIRE(got.size() == 1);
    REQUIRE(refresh.ParseFromString(got[0].body));
    REQUIRE(refresh.fields().fields_size() == 1);
    CHECK(refresh.fields().fields(0).id() == 22);
    CHECK(fanout.counters().refreshes_out == 2);

    // Without image fields (cache off, upstream sent none) the refresh still goes out.
    fanout.fan_out_image(*items.a, nullptr);
    got = clients.received(whole);
    REQUIRE(got.size() == 1);
    REQUIRE(refresh.ParseFromString(got[0].body));
    CHECK(refresh.fields().fields_size() == 0);
}

TEST_CASE("a snapshot is one solicited image with the stream closed", "[fanout]") {
    ClientFixture clients;
    Items items;
    Fanout fanout(items.cache, clients.loop());
    ClientSession& client = clients.connect();
    fanout.send_image(client, *items.b, &items.b->image, {30}, true);
    const auto got = clients.received(client);
    REQUIRE(got.size() == 1);
    wire::Refresh refresh;
    REQUIRE(refresh.ParseFromString(got[0].body));
    CHECK(refresh.solicited());
    CHECK(refresh.status().stream_state() == wire::STREAM_CLOSED);
    REQUIRE(refresh.fields().fields_size() == 1);
    CHECK(refresh.fields().fields(0).id() == 30);
    CHECK(fanout.subscription_count(client) == 0);
}

// A client with a 200-byte queue, subscribed to items 1 and 2, made to conflate
// by updates of item 1 (the next sequence to send is `seq`).
struct SlowClient {
    ClientFixture clients;
    Items items;
    Fanout fanout{items.cache, clients.loop()};
    ClientSession& slow = clients.connect(true, 200);
    uint64_t seq = 2;
    SlowClient() {
        clients.on_drained = [this](ClientSession& c) { fanout.drain(c); };
        fanout.subscribe(slow, 1, {});
        fanout.subscribe(slow, 2, {});
        while (!slow.conflating()) {
            REQUIRE(seq < 100);
            items.update(fanout, make_update(1, seq++, {30}));
        }
    }
};

TEST_CASE_METHOD(SlowClient, "a conflating client is sent the current state once its queue drains",
                 "[fanout]") {
    const uint64_t last_seq = seq + 3;
    while (seq <= last_seq) items.update(fanout, make_update(1, seq++, {30}));
    ItemCache::invalidate(*items.b, wire::STATUS_SOURCE_DOWN, "down");
    fanout.fan_out_status(*items.b);  // owed too, while conflating

    // Flushing drains the queue, which makes the session ask for its backlog.
    std::vector<ReceivedFrame> got;
    for (int round = 0; round < 10 && slow.conflating(); ++round) {
        for (auto& frame : clients.received(slow)) got.push_back(std::move(frame));
    }
    for (auto& frame : clients.received(slow)) got.push_back(std::move(frame));
    CHECK_FALSE(slow.conflating());
    REQUIRE(got.size() >= 2);
    CHECK(fanout.counters().conflated_out == 2);

    // Item 1: one conflated update carrying its current values; item 2, its source down
    // but its values held: its image with the status naming why (a status alone would
    // leave the client behind the cache, with no image to follow while the source is down).
    const auto& conflated = got[got.size() - 2];
    REQUIRE(conflated.type == FrameType::kUpdate);
    proto::UpdateView update;
    REQUIRE(proto::decode_update(
        {reinterpret_cast<const uint8_t*>(conflated.body.data()), conflated.body.size()}, update));
    CHECK(update.conflated);
    CHECK(update.item_id == 1);
    CHECK(update.item_seq == last_seq);
    CHECK(update.fields.size() == 3);
    const auto& image_frame = got.back();
    REQUIRE(image_frame.type == FrameType::kRefresh);
    wire::Refresh image;
    REQUIRE(image.ParseFromString(image_frame.body));
    CHECK(image.item_id() == 2);
    CHECK(image.item_seq() == items.b->item_seq);
    CHECK(image.fields().fields_size() == static_cast<int>(items.b->image.size()));
    CHECK(image.status().data_state() == wire::DATA_SUSPECT);
    CHECK(image.status().code() == wire::STATUS_SOURCE_DOWN);
    CHECK(fanout.counters().conflated_suspect_images == 1);
    CHECK(clients.closes.empty());
}

TEST_CASE_METHOD(SlowClient,
                 "a conflating client owed an item that holds no values gets its status",
                 "[fanout]") {
    ItemCache::invalidate(*items.b, wire::STATUS_SOURCE_DOWN, "down");
    items.b->image.clear();
    fanout.fan_out_status(*items.b);
    std::vector<ReceivedFrame> got;
    for (int round = 0; round < 10 && slow.conflating(); ++round) {
        for (auto& frame : clients.received(slow)) got.push_back(std::move(frame));
    }
    REQUIRE_FALSE(got.empty());
    const auto& status_frame = got.back();
    REQUIRE(status_frame.type == FrameType::kItemStatus);
    wire::ItemStatus status;
    REQUIRE(status.ParseFromString(status_frame.body));
    CHECK(status.item_id() == 2);
    CHECK(status.status().code() == wire::STATUS_SOURCE_DOWN);
    CHECK(fanout.counters().conflated_suspect_images == 0);
}

TEST_CASE_METHOD(SlowClient, "the drain forgets items unsubscribed while conflating", "[fanout]") {
    fanout.unsubscribe(slow, 1);
    fanout.unsubscribe(slow, 2);
    for (int round = 0; round < 10 && slow.conflating(); ++round) clients.received(slow);
    CHECK_FALSE(slow.conflating());
    CHECK(fanout.counters().conflated_out == 0);
}

TEST_CASE_METHOD(SlowClient,
                 "an item gone suspect with its image kept drains to the cache's values",
                 "[fanout]") {
    // Issue 12: updates applied while the client conflated, then the source marks
    // the item suspect but keeps it (and its values) open. A status alone would
    // leave the client at its last value, behind the cache.
    const uint64_t last_seq = seq + 3;
    while (seq <= last_seq) items.update(fanout, make_update(1, seq++, {30}));
    wire::ItemStatus stale;
    stale.set_item_id(1);
    *stale.mutable_status() = mdcast::server::make_status(wire::STREAM_OPEN, wire::DATA_SUSPECT,
                                                          wire::STATUS_SOURCE_DOWN, "stale");
    CachedItem* item = nullptr;
    REQUIRE(items.cache.apply_status(stale, item) == ItemCache::Outcome::kApplied);
    REQUIRE(item->has_image);
    fanout.fan_out_status(*item);

    std::vector<ReceivedFrame> got;
    for (int round = 0; round < 10 && slow.conflating(); ++round) {
        for (auto& frame : clients.received(slow)) got.push_back(std::move(frame));
    }
    for (auto& frame : clients.received(slow)) got.push_back(std::move(frame));
    CHECK_FALSE(slow.conflating());
    REQUIRE_FALSE(got.empty());
    const auto& last = got.back();
    REQUIRE(last.type == FrameType::kRefresh);
    wire::Refresh refresh;
    REQUIRE(refresh.ParseFromString(last.body));
    CHECK(refresh.item_id() == 1);
    CHECK(refresh.item_seq() == last_seq);  // the cache's values, not the last ones sent
    CHECK(refresh.status().data_state() == wire::DATA_SUSPECT);  // and still suspect
    CHECK(refresh.fields().fields_size() == 3);
    CHECK(fanout.counters().conflated_suspect_images >= 1);
}

// Subscribe.conflate_ms: the interval's first update at once, the rest merged
// and sent when the interval ends; a status does not wait but follows what was
// owed; a plain subscriber of the same item gets every update.
TEST_CASE("a conflate_ms subscription gets one update per interval and statuses at once",
          "[fanout][conflation]") {
    ClientFixture clients;
    Items items;
    Fanout fanout(items.cache, clients.loop());
    ClientSession& paced = clients.connect();
    ClientSession& every = clients.connect();
    CHECK(fanout.subscribe(paced, 1, {}, 60'000));  // long enough not to end by itself here
    CHECK(fanout.subscribe(every, 1, {}));
    CHECK(fanout.subscriptions_of(paced)->at(1).empty());

    for (uint64_t seq = 2; seq <= 5; ++seq) {
        items.update(
            fanout,
            make_update(1, seq, seq == 4 ? std::vector<uint32_t>{32} : std::vector<uint32_t>{22}));
    }
    CHECK(clients.received(every).size() == 4);
    auto got = clients.received(paced);
    REQUIRE(got.size() == 1);  // the first, at once
    CHECK(fanout.counters().paced_held == 3);
    CHECK(fanout.paced_waiting() == 1);

    fanout.send_paced(mdcast::monotonic_ns());  // the interval has not ended
    CHECK(clients.received(paced).empty());
    fanout.send_paced(mdcast::monotonic_ns() + 61'000 * int64_t{1'000'000});
    got = clients.received(paced);
    REQUIRE(got.size() == 1);
    proto::UpdateView sent;
    REQUIRE(proto::decode_update(
        {reinterpret_cast<const uint8_t*>(got[0].body.data()), got[0].body.size()}, sent));
    CHECK(sent.conflated);
    CHECK(sent.item_seq == 5);
    CHECK(field_ids(got[0]) == std::vector<uint32_t>{22, 32});
    CHECK(sent.fields[0].integer == 5 * 1000 + 22);  // seq 5's value, not seq 3's
    CHECK(sent.fields[1].integer == 4 * 1000 + 32);
    CHECK(fanout.counters().paced_out == 1);

    // An image carries everything: nothing owed is sent after it.
    items.update(fanout, make_update(1, 6, {30}));
    fanout.fan_out_image(*items.a, &items.a->image);
    fanout.send_paced(mdcast::monotonic_ns() + 200'000 * int64_t{1'000'000});
    got = clients.received(paced);
    REQUIRE(got.size() == 1);
    CHECK(got[0].type == FrameType::kRefresh);

    // Owed again, then a status: the owed update first, then the status, at once.
    items.update(fanout, make_update(1, 7, {30}));
    CHECK(clients.received(paced).empty());
    ItemCache::invalidate(*items.a, wire::STATUS_SOURCE_DOWN, "down");
    fanout.fan_out_status(*items.a);
    got = clients.received(paced);
    REQUIRE(got.size() == 2);
    CHECK(got[0].type == FrameType::kUpdate);
    CHECK(field_ids(got[0]) == std::vector<uint32_t>{30});
    CHECK(got[1].type == FrameType::kItemStatus);
    CHECK(fanout.counters().paced_flushed == 1);
}

TEST_CASE("conflated subscriptions share a group and leave the book cleanly",
          "[fanout][conflation]") {
    ClientFixture clients;
    Items items;
    Fanout fanout(items.cache, clients.loop());
    ClientSession& x = clients.connect();
    ClientSession& y = clients.connect();
    CHECK(fanout.subscribe(x, 1, {22}, 100));
    CHECK(fanout.subscribe(y, 1, {22}, 100));
    CHECK_FALSE(fanout.subscribe(x, 1, {22}));  // already held
    const auto taken = fanout.take_item(1);
    REQUIRE(taken.size() == 2);
    CHECK(taken[0].conflate_ms == 100);
    CHECK(taken[0].view == std::vector<uint32_t>{22});
    CHECK_FALSE(fanout.has_subscribers(1));
    // A pending interval of an unsubscribed client sends nothing.
    fanout.subscribe(x, 2, {}, 100);
    items.update(fanout, make_update(2, 2, {22}));
    items.update(fanout, make_update(2, 3, {22}));
    CHECK(fanout.paced_waiting() == 1);
    CHECK(fanout.unsubscribe(x, 2));
    clients.received(x);
    fanout.send_paced(mdcast::monotonic_ns() + 1'000'000'000);
    CHECK(clients.received(x).empty());
    CHECK(fanout.paced_waiting() == 0);
}
