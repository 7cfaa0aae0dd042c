// PublisherSession with books (docs/books.md): a book's refresh and updates are
// checked whole before anything is forwarded, updates are marked trades, the
// image cache keeps the book, and registry.max_book_entries is loud.
#include <catch2/catch.hpp>
#include <string>

#include "distributor/publisher_session.h"
#include "proto/book_image.h"
#include "publisher_fixture.h"

using namespace mdcast;
using mdcast::distributor::PublisherSession;
using mdcast::distributor::testing::PublisherFixture;
namespace wire_v1 = mdcast::wire::v1;
using proto::FrameType;

namespace {

uint64_t book_item(PublisherFixture& f, PublisherSession& session) {
    wire_v1::ServiceAnnounce announce;
    announce.set_name("BOOKS");
    announce.set_mode(wire_v1::SERVICE_BROADCAST);
    f.send(session, FrameType::kServiceAnnounce, announce);
    wire_v1::ServiceAnnounceResponse announced;
    REQUIRE(announced.ParseFromString(f.received(session).at(0).body));
    wire_v1::ItemRegister request;
    request.set_service_id(announced.service_id());
    auto* entry = request.add_items();
    entry->set_ref(1);
    entry->set_name("VOD.MBO");
    f.send(session, FrameType::kItemRegister, request);
    wire_v1::ItemRegistered registered;
    REQUIRE(registered.ParseFromString(f.received(session).at(0).body));
    f.backbone_messages();
    return registered.items(0).item_id();
}

std::string orders(std::initializer_list<const char*> ids, proto::MapAction action) {
    std::string map;
    for (const char* id : ids) {
        proto::MapEntryView e;
        e.name = id;
        e.action = action;
        proto::append_map_entry(map, e, {});
    }
    return map;
}

wire_v1::Refresh book_refresh(uint64_t item, const std::string& map) {
    wire_v1::Refresh refresh;
    refresh.set_item_id(item);
    refresh.set_item_seq(1);
    refresh.set_domain(wire_v1::DOMAIN_MARKET_BY_ORDER);
    refresh.set_map(map);
    return refresh;
}

std::string book_update(uint64_t item, uint64_t seq, const std::string& map) {
    wire_v1::Update update;
    update.set_item_id(item);
    update.set_item_seq(seq);
    update.set_map(map);
    std::string frame = proto::encode_frame_string(FrameType::kUpdate, update);
    frame[7] = static_cast<char>(proto::kFrameFlagMap);  // as the SDK frames it
    return frame;
}

size_t cached_entries(PublisherFixture& f, uint64_t item) {
    const auto* book = f.registry().item(item)->image.book();
    REQUIRE(book != nullptr);
    return book->size();
}

}  // namespace

TEST_CASE("a book is cached, its updates forwarded marked as trades", "[publisher_session]") {
    PublisherFixture f;
    PublisherSession& session = f.logged_in();
    const uint64_t item = book_item(f, session);
    f.send(session, FrameType::kRefresh,
           book_refresh(item, orders({"A", "B"}, proto::MapAction::kAdd)));
    auto carried = f.backbone_messages();
    REQUIRE(carried.size() == 1);
    CHECK(proto::decode_frame_header(reinterpret_cast<const uint8_t*>(carried[0].whole.data()))
              .flags == proto::kFrameFlagMap);
    CHECK(cached_entries(f, item) == 2);

    f.send_bytes(session, book_update(item, 2, orders({"A"}, proto::MapAction::kDelete)));
    carried = f.backbone_messages();
    REQUIRE(carried.size() == 1);
    proto::UpdateView view;
    REQUIRE(proto::decode_update(
        {reinterpret_cast<const uint8_t*>(carried[0].body.data()), carried[0].body.size()}, view));
    CHECK(view.trade);  // marked by the distributor
    CHECK_FALSE(view.map_bytes.empty());
    CHECK(cached_entries(f, item) == 1);
    CHECK(f.received(session).empty());
}

TEST_CASE("a malformed book or one over registry.max_book_entries is refused or loud",
          "[publisher_session]") {
    PublisherFixture f({}, 2);
    PublisherSession& session = f.logged_in();
    const uint64_t item = book_item(f, session);
    SECTION("a refresh whose map is malformed: nothing forwarded") {
        f.send(session, FrameType::kRefresh, book_refresh(item, "\x0A\x02\x18\x01"));
        CHECK(f.backbone_messages().empty());
        wire_v1::ItemStatus status;
        REQUIRE(status.ParseFromString(f.received(session).at(0).body));
        CHECK(status.status().code() == wire_v1::STATUS_INVALID_REQUEST);
    }
    SECTION("a refresh over the limit closes the item") {
        f.send(session, FrameType::kRefresh,
               book_refresh(item, orders({"A", "B", "C"}, proto::MapAction::kAdd)));
        const auto carried = f.backbone_messages();
        REQUIRE(carried.size() == 1);
        CHECK(carried[0].type == FrameType::kItemStatus);
        CHECK(f.registry().item(item)->closed);
    }
    SECTION("an update over the limit: forwarded, the cached book suspect, the publisher told") {
        f.send(session, FrameType::kRefresh,
               book_refresh(item, orders({"A"}, proto::MapAction::kAdd)));
        f.backbone_messages();
        f.send_bytes(session, book_update(item, 2, orders({"B", "C"}, proto::MapAction::kAdd)));
        CHECK(f.backbone_messages().size() == 1);
        CHECK(cached_entries(f, item) == 2);
        CHECK(f.registry().item(item)->status_code == wire_v1::STATUS_LIMIT_REACHED);
        wire_v1::ItemStatus status;
        REQUIRE(status.ParseFromString(f.received(session).at(0).body));
        CHECK(status.status().text().find("registry.max_book_entries") != std::string::npos);
    }
    SECTION("an update with a map for an item that is not a book: refused") {
        wire_v1::Refresh flat = book_refresh(item, "");
        flat.set_domain(wire_v1::DOMAIN_MARKET_PRICE);
        f.send(session, FrameType::kRefresh, flat);
        f.backbone_messages();
        f.send_bytes(session, book_update(item, 2, orders({"B"}, proto::MapAction::kAdd)));
        CHECK(f.backbone_messages().empty());
    }
}
