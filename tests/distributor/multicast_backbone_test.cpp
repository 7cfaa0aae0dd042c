// The multicast backbone as the distributor's "backbone out": a server is
// known by the server_id of its control messages (or, from a server that sends
// none, by its control socket's address); a NOT_FOUND the distributor returns
// reaches the asker alone; NAKs are answered inside the backbone, from its
// retransmit window, and never reach the distributor.
#include "distributor/multicast_backbone.h"

#include <arpa/inet.h>

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "backbone_tap.h"
#include "control_peer.h"

using namespace mdcast;
using namespace mdcast::distributor;
using mdcast::distributor::testing::BackboneTap;
using mdcast::distributor::testing::ControlPeer;
using mdcast::distributor::testing::pump;
using mdcast::distributor::testing::settle;
namespace wire_v1 = mdcast::wire::v1;

namespace {

struct Recorder final : BackboneOut::Handler {
    std::vector<std::pair<std::string, ServerId>> asks;  // item name or "interest", server
    std::optional<wire_v1::ItemStatus> private_answer;
    size_t directory_queries = 0;

    std::optional<wire_v1::ItemStatus> on_image_request(const wire_v1::ImageRequest& request,
                                                        ServerId from) override {
        asks.emplace_back(request.item_name(), from);
        return private_answer;
    }
    void on_directory_query() override { ++directory_queries; }
    void on_interest(const wire_v1::Interest&, ServerId from) override {
        asks.emplace_back("interest", from);
    }
    void on_post(const wire_v1::Post& post, ServerId from) override {
        asks.emplace_back("post " + std::to_string(post.post_id()), from);
    }
    void on_congestion(bool) override {}
};

struct Fixture {
    EventLoop loop;
    DistributorConfig config = testing::loopback_config("239.255.77.22");
    BackboneTap tap{config};
    Recorder recorder;
    MulticastBackbone backbone{loop, config, 9, recorder};
    ControlPeer server{backbone.control_port()};

    bool wait_for_asks(size_t n) {
        return pump(loop, [&] { return recorder.asks.size() >= n; });
    }
};

wire_v1::ImageRequest request_for(const std::string& name, uint64_t server_id) {
    wire_v1::ImageRequest request;
    request.set_service_name("SVC");
    request.set_item_name(name);
    request.set_server_id(server_id);
    return request;
}

}  // namespace

TEST_CASE("a server is its server_id, one that sends none is its control address",
          "[multicast_backbone]") {
    Fixture f;
    wire_v1::Interest interest;
    interest.set_epoch(9);
    interest.add_held_item_ids(1);
    interest.set_server_id(0xfeedfacecafe0001);
    f.server.add(proto::FrameType::kImageRequest, request_for("A", 0xfeedfacecafe0001))
        .add(proto::FrameType::kInterest, interest)
        .send();
    f.server.add(proto::FrameType::kImageRequest, request_for("OLD", 0)).send();
    REQUIRE(f.wait_for_asks(3));
    CHECK(f.recorder.asks[0] == std::pair<std::string, ServerId>{"A", 0xfeedfacecafe0001});
    CHECK(f.recorder.asks[1] == std::pair<std::string, ServerId>{"interest", 0xfeedfacecafe0001});
    const ServerId by_address = uint64_t{INADDR_LOOPBACK} << 16 | f.server.port();
    CHECK(f.recorder.asks[2] == std::pair<std::string, ServerId>{"OLD", by_address});
}

TEST_CASE("the server id is carried, not the address: two sockets with one id are one server",
          "[multicast_backbone]") {
    Fixture f;
    ControlPeer moved(f.backbone.control_port());  // the same server on a new socket
    f.server.add(proto::FrameType::kImageRequest, request_for("A", 77)).send();
    moved.add(proto::FrameType::kImageRequest, request_for("B", 77)).send();
    REQUIRE(f.wait_for_asks(2));
    CHECK(f.recorder.asks[0].second == 77);
    CHECK(f.recorder.asks[1].second == 77);
}

TEST_CASE("an answer the distributor returns reaches the asking server alone",
          "[multicast_backbone]") {
    Fixture f;
    ControlPeer other(f.backbone.control_port());
    wire_v1::ItemStatus not_found;
    not_found.set_item_name("NOPE");
    not_found.mutable_status()->set_code(wire_v1::STATUS_NOT_FOUND);
    f.recorder.private_answer = not_found;
    f.server.add(proto::FrameType::kImageRequest, request_for("NOPE", 1)).send();
    std::vector<testing::ReceivedMessage> replies;
    REQUIRE(pump(f.loop, [&] {
        for (auto& reply : f.server.replies()) replies.push_back(std::move(reply));
        return !replies.empty();
    }));
    REQUIRE(replies.size() == 1);
    CHECK(replies[0].type == proto::FrameType::kItemStatus);
    settle(f.loop);
    f.backbone.flush();
    CHECK(other.replies().empty());
    CHECK(f.tap.messages().empty());  // nothing on the multicast group
}

TEST_CASE("a post's answer goes to the server that posted alone, an unknown server's is dropped",
          "[multicast_backbone][posts]") {
    Fixture f;
    ControlPeer other(f.backbone.control_port());
    wire_v1::Post post;
    post.set_post_id(41);
    post.set_server_id(0xabc);
    f.server.add(proto::FrameType::kPost, post).send();
    REQUIRE(f.wait_for_asks(1));
    CHECK(f.recorder.asks[0] == std::pair<std::string, ServerId>{"post 41", 0xabc});
    wire_v1::PostAck ack;
    ack.set_post_id(41);
    ack.set_text("no thanks");
    f.backbone.answer_post(0xabc, ack);
    f.backbone.answer_post(0xdef, ack);  // never posted here: nowhere to go
    std::vector<testing::ReceivedMessage> replies;
    REQUIRE(pump(f.loop, [&] {
        for (auto& reply : f.server.replies()) replies.push_back(std::move(reply));
        return !replies.empty();
    }));
    REQUIRE(replies.size() == 1);
    CHECK(replies[0].type == proto::FrameType::kPostAck);
    wire_v1::PostAck got;
    REQUIRE(got.ParseFromString(replies[0].body));
    CHECK(got.text() == "no thanks");
    settle(f.loop);
    CHECK(other.replies().empty());
    CHECK(f.server.replies().empty());
}

TEST_CASE("NAKs are repaired by the backbone and never reach the distributor",
          "[multicast_backbone]") {
    Fixture f;
    wire_v1::ItemStatus status;
    status.set_item_name("X");
    REQUIRE(f.backbone.send(proto::FrameType::kItemStatus, status));
    f.backbone.flush();
    REQUIRE(pump(f.loop, [&] { return f.tap.messages().size() == 1; }));
    wire_v1::Nak nak;
    auto* range = nak.add_ranges();
    range->set_from(1);
    range->set_to(2);
    nak.set_server_id(3);
    f.server.add(proto::FrameType::kNak, nak).send();
    std::vector<testing::BackboneMessage> repaired;
    REQUIRE(pump(f.loop, [&] {
        for (auto& message : f.tap.messages()) repaired.push_back(std::move(message));
        return !repaired.empty();
    }));
    REQUIRE(repaired.size() == 1);
    CHECK(repaired[0].type == proto::FrameType::kItemStatus);
    CHECK(f.recorder.asks.empty());
}
