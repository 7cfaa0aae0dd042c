// ImageService wired to the interest leases as in the distributor
// (rooms_fixture.h): an item with an image is answered by a solicited Refresh
// on the backbone (suspect while its service is down); an unknown name is
// answered NOT_FOUND to the asker alone, names cut to the wire limits; an
// interactive item without an image is asked of its source and the servers
// told it is recovering; an image served renews the asker's lease.
#include "distributor/image_service.h"

#include <catch2/catch.hpp>
#include <string>

#include "proto/limits.h"
#include "rooms_fixture.h"

using namespace mdcast;
using mdcast::distributor::ItemEntry;
using mdcast::distributor::testing::RoomsFixture;
namespace wire_v1 = mdcast::wire::v1;
using proto::FrameType;

namespace {

constexpr uint64_t kServer = 0xabc;

wire_v1::ImageRequest by_name(const std::string& service, const std::string& item) {
    wire_v1::ImageRequest request;
    request.set_service_name(service);
    request.set_item_name(item);
    request.set_server_id(kServer);
    return request;
}

// The one message the backbone carried, parsed.
template <class Message>
Message carried(RoomsFixture& f, FrameType type) {
    const auto messages = f.backbone_messages();
    REQUIRE(messages.size() == 1);
    REQUIRE(messages[0].type == type);
    Message message;
    REQUIRE(message.ParseFromString(messages[0].body));
    return message;
}

}  // namespace

TEST_CASE("an item with an image is answered on the backbone from the cache", "[image_service]") {
    RoomsFixture f;
    auto& service = f.service("SVC", wire_v1::SERVICE_BROADCAST);
    service.state = GENERATE(wire_v1::SERVICE_UP, wire_v1::SERVICE_DOWN);
    auto& item = f.imaged_item(service, "IBM.N");
    f.backbone_messages();
    wire_v1::ImageRequest request;  // by id, as a server recovering after loss asks
    request.set_item_id(item.id);
    CHECK_FALSE(f.images().on_image_request(request, kServer));
    const auto refresh = carried<wire_v1::Refresh>(f, FrameType::kRefresh);
    CHECK(refresh.item_id() == item.id);
    CHECK(refresh.item_seq() == 3);
    CHECK(refresh.solicited());
    CHECK(refresh.clear_cache());
    CHECK(refresh.item_name() == "IBM.N");
    CHECK(refresh.service_name() == "SVC");
    CHECK(refresh.status().data_state() ==
          (service.state == wire_v1::SERVICE_UP ? wire_v1::DATA_OK : wire_v1::DATA_SUSPECT));
    CHECK(refresh.status().code() == (service.state == wire_v1::SERVICE_UP
                                          ? wire_v1::STATUS_NONE
                                          : wire_v1::STATUS_SOURCE_DOWN));
    CHECK(refresh.status().text().empty() == (service.state == wire_v1::SERVICE_UP));
    CHECK(f.leases().holders(item.id) == 0);  // broadcast: no lease
}

TEST_CASE("a suspect image carries the code and text that made it suspect", "[image_service]") {
    RoomsFixture f;
    auto& service = f.service("SVC", wire_v1::SERVICE_BROADCAST);
    auto& item = f.imaged_item(service, "IBM.N");
    SECTION("its source went away") {
        service.state = wire_v1::SERVICE_DOWN;
        f.registry().mark_service_items_suspect(service.id);
    }
    SECTION("its publisher said why") {
        item.data_state = wire_v1::DATA_SUSPECT;
        item.status_code = wire_v1::STATUS_UNRECOVERABLE_LOSS;
        item.status_text = "feed gap at the exchange";
    }
    f.backbone_messages();
    CHECK_FALSE(f.images().on_image_request(by_name("SVC", "IBM.N"), kServer));
    const auto refresh = carried<wire_v1::Refresh>(f, FrameType::kRefresh);
    CHECK(refresh.status().data_state() == wire_v1::DATA_SUSPECT);
    CHECK(refresh.status().code() == item.status_code);
    CHECK(refresh.status().text() == item.status_text);
    CHECK(refresh.status().code() != wire_v1::STATUS_NONE);
    CHECK_FALSE(refresh.status().text().empty());
}

TEST_CASE("an item its source closed is answered closed with the source's code and text",
          "[image_service]") {
    // An SDK publisher closes an item it can no longer send (its image over
    // publishers.max_frame_bytes): late subscribers learn why, not just "closed".
    RoomsFixture f;
    auto& service = f.service("SVC", wire_v1::SERVICE_BROADCAST);
    auto& item = f.imaged_item(service, "BIG.BOOK");
    item.closed = true;
    item.has_image = false;
    item.status_code = wire_v1::STATUS_LIMIT_REACHED;
    item.status_text = "image of 70000 bytes is over the distributor's frame limit";
    f.backbone_messages();
    CHECK_FALSE(f.images().on_image_request(by_name("SVC", "BIG.BOOK"), kServer));
    const auto status = carried<wire_v1::ItemStatus>(f, FrameType::kItemStatus);
    CHECK(status.status().stream_state() == wire_v1::STREAM_CLOSED);
    CHECK(status.status().code() == wire_v1::STATUS_LIMIT_REACHED);
    CHECK(status.status().text() == item.status_text);
}

TEST_CASE("an unknown name is answered to the asker alone, never on the backbone",
          "[image_service]") {
    RoomsFixture f;
    f.service("SVC", wire_v1::SERVICE_BROADCAST);
    f.backbone_messages();
    SECTION("no such service") {
        const auto answer = f.images().on_image_request(by_name("NOPE", "IBM.N"), kServer);
        REQUIRE(answer);
        CHECK(answer->status().text() == "no such service");
        CHECK(answer->service_name() == "NOPE");
    }
    SECTION("no such item, with a name beyond the wire limit") {
        const std::string long_name(proto::kMaxItemNameBytes + 10, 'x');
        const auto answer = f.images().on_image_request(by_name("SVC", long_name), kServer);
        REQUIRE(answer);
        CHECK(answer->status().text() == "no such item");
        CHECK(answer->item_name().size() == proto::kMaxItemNameBytes);
        CHECK(answer->status().code() == wire_v1::STATUS_NOT_FOUND);
        CHECK(answer->status().stream_state() == wire_v1::STREAM_CLOSED);
    }
    CHECK(f.backbone_messages().empty());
    CHECK(f.registry().item_count() == 0);
}

TEST_CASE("an interactive item without an image is asked of its source, servers hear it recovers",
          "[image_service]") {
    RoomsFixture f;
    f.service("ASK", wire_v1::SERVICE_INTERACTIVE);
    f.backbone_messages();
    CHECK_FALSE(f.images().on_image_request(by_name("ASK", "IBM.N"), kServer));
    CHECK(f.asked == std::vector<std::string>{"IBM.N"});
    const auto status = carried<wire_v1::ItemStatus>(f, FrameType::kItemStatus);
    CHECK(status.item_id() != 0);  // registered on the way
    CHECK(status.status().code() == wire_v1::STATUS_RECOVERING);
    CHECK(status.status().stream_state() == wire_v1::STREAM_OPEN);
    CHECK(f.leases().holders(status.item_id()) == 1);

    SECTION("with no source connected, an unknown name is not found") {
        f.source_up = false;
        const auto answer = f.images().on_image_request(by_name("ASK", "MSFT.O"), kServer);
        REQUIRE(answer);
        CHECK(answer->status().code() == wire_v1::STATUS_NOT_FOUND);
        CHECK(f.registry().item_count() == 1);
    }
    SECTION("once it has an image, the cache answers and renews the asker's lease") {
        ItemEntry* item = f.registry().item(status.item_id());
        item->has_image = true;
        constexpr uint64_t kOtherServer = 0xdef;
        CHECK_FALSE(f.images().on_image_request(by_name("ASK", "IBM.N"), kOtherServer));
        CHECK(carried<wire_v1::Refresh>(f, FrameType::kRefresh).item_id() == item->id);
        CHECK(f.leases().holders(item->id) == 2);
        CHECK(f.asked.size() == 1);  // not asked again
    }
}

TEST_CASE("a name over the awaiting bounds is refused to the asker alone",
          "[image_service][hardening]") {
    RoomsFixture f(1, 10);
    f.service("ASK", wire_v1::SERVICE_INTERACTIVE);
    CHECK_FALSE(f.images().on_image_request(by_name("ASK", "IBM.N"), kServer));
    f.backbone_messages();
    const auto answer = f.images().on_image_request(by_name("ASK", "MSFT.O"), kServer);
    REQUIRE(answer);
    CHECK(answer->item_id() == 0);
    CHECK(answer->status().code() == wire_v1::STATUS_LIMIT_REACHED);
    CHECK(answer->status().stream_state() == wire_v1::STREAM_CLOSED);
    CHECK(answer->status().text().find("interactive.max_awaiting_per_service") !=
          std::string::npos);
    CHECK(f.backbone_messages().empty());
    CHECK(f.asked == std::vector<std::string>{"IBM.N"});
}

TEST_CASE("servers asking again before the source is due put nothing on the backbone",
          "[image_service][hardening]") {
    RoomsFixture f;
    f.service("ASK", wire_v1::SERVICE_INTERACTIVE);
    CHECK_FALSE(f.images().on_image_request(by_name("ASK", "IBM.N"), kServer));
    CHECK(f.backbone_messages().size() == 1);  // the source was asked: servers hear it
    for (uint64_t server = 1; server <= 50; ++server) {
        CHECK_FALSE(f.images().on_image_request(by_name("ASK", "IBM.N"), server));
    }
    CHECK(f.backbone_messages().empty());  // 50 retries, no status storm
    CHECK(f.asked.size() == 1);
}
