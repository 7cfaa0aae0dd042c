// ControlReceiver on a real loopback socket, spoken to by a server's control
// socket (tests/distributor/control_peer.h): every control message reaches its
// handler with the sender's address, in packet order; malformed, wrong-type,
// unsigned and forged datagrams are dropped and counted without stopping the
// next one; RTT probes are echoed and NOT_FOUND answers go to the asker alone.
#include "distributor/control_receiver.h"

#include <arpa/inet.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "control_peer.h"

using namespace mdcast;
using mdcast::distributor::ControlReceiver;
using mdcast::distributor::testing::ControlPeer;
using mdcast::distributor::testing::pump;
using mdcast::distributor::testing::settle;
namespace wire_v1 = mdcast::wire::v1;

namespace {

// The distributor's side: records what the receiver hands on, with the sender's port.
struct Recorder final : ControlReceiver::Handler {
    std::vector<std::string> events;  // "image ITEM from PORT", "nak 3 from PORT", ...
    void on_image_request(const wire_v1::ImageRequest& request, const sockaddr_in& from) override {
        events.push_back("image " + request.item_name() + " from " + port_of(from));
    }
    void on_directory_query() override { events.push_back("directory"); }
    void on_nak(const wire_v1::Nak& nak, const sockaddr_in& from) override {
        events.push_back("nak " + std::to_string(nak.ranges(0).from()) + " from " + port_of(from));
    }
    void on_interest(const wire_v1::Interest& interest, const sockaddr_in& from) override {
        events.push_back("interest " + std::to_string(interest.held_item_ids_size()) + " from " +
                         port_of(from));
    }
    void on_post(const wire_v1::Post& post, const sockaddr_in& from) override {
        events.push_back("post " + std::to_string(post.post_id()) + " from " + port_of(from));
    }
    static std::string port_of(const sockaddr_in& from) {
        return std::to_string(ntohs(from.sin_port));
    }
};

wire_v1::ImageRequest image_request(const std::string& name) {
    wire_v1::ImageRequest request;
    request.set_service_name("SVC");
    request.set_item_name(name);
    return request;
}

wire_v1::Nak nak_from(uint64_t sequence) {
    wire_v1::Nak nak;
    auto* range = nak.add_ranges();
    range->set_from(sequence);
    range->set_to(sequence + 1);
    return nak;
}

struct Fixture {
    EventLoop loop;
    Recorder recorder;
    ControlReceiver receiver;
    ControlPeer server;

    explicit Fixture(const PacketSigner* signer = nullptr, const LossSettings& loss = {})
        : receiver(loop, "127.0.0.1", 0, recorder, loss, signer), server(receiver.port()) {}

    bool wait_for_events(size_t n) {
        return pump(loop, [&] { return recorder.events.size() >= n; });
    }
    bool wait_for_drops(const uint64_t& counter, uint64_t n) {
        return pump(loop, [&] { return counter >= n; });
    }
};

}  // namespace

TEST_CASE("every control message reaches its handler in order, with the sender's address",
          "[control_receiver]") {
    Fixture f;
    wire_v1::Interest interest;
    interest.add_held_item_ids(7);
    interest.add_held_item_ids(8);
    f.server.add(proto::FrameType::kImageRequest, image_request("A"))
        .add(proto::FrameType::kDirectoryQuery, wire_v1::DirectoryQuery())
        .add(proto::FrameType::kNak, nak_from(3))
        .add(proto::FrameType::kInterest, interest)
        .send();
    REQUIRE(f.wait_for_events(4));
    const std::string port = std::to_string(f.server.port());
    CHECK(f.recorder.events == std::vector<std::string>{"image A from " + port, "directory",
                                                        "nak 3 from " + port,
                                                        "interest 2 from " + port});
    const auto& c = f.receiver.counters();
    CHECK(c.packets_received == 1);
    CHECK(c.image_requests == 1);
    CHECK(c.directory_queries == 1);
    CHECK(c.naks == 1);
    CHECK(c.interest_messages == 1);
    CHECK(c.malformed == 0);
}

TEST_CASE("a post reaches the handler with its sender, its answer goes back to that socket",
          "[control_receiver][posts]") {
    Fixture f;
    wire_v1::Post post;
    post.set_post_id(12);
    f.server.add(proto::FrameType::kPost, post).send();
    REQUIRE(f.wait_for_events(1));
    CHECK(f.recorder.events[0] == "post 12 from " + std::to_string(f.server.port()));
    CHECK(f.receiver.counters().posts == 1);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    to.sin_port = htons(f.server.port());
    wire_v1::PostAck ack;
    ack.set_post_id(12);
    ack.set_accepted(true);
    f.receiver.reply_post_ack(ack, to);
    std::vector<mdcast::distributor::testing::ReceivedMessage> replies;
    REQUIRE(pump(f.loop, [&] {
        for (auto& reply : f.server.replies()) replies.push_back(std::move(reply));
        return !replies.empty();
    }));
    CHECK(replies[0].type == proto::FrameType::kPostAck);
    CHECK(f.receiver.counters().post_answers == 1);
}

TEST_CASE("a malformed datagram is dropped and counted, the next one is handled",
          "[control_receiver]") {
    Fixture f;
    const uint64_t& malformed = f.receiver.counters().malformed;
    SECTION("not a packet") {
        const std::vector<uint8_t> garbage(40, 0xab);
        f.server.send_raw(garbage);
    }
    SECTION("a data packet sent to the control port") {
        proto::PacketBuilder packet(1400);
        packet.add(proto::FrameType::kImageRequest, image_request("A"));
        f.server.send_raw(packet.finish(proto::PacketType::kData, 1, 1));
    }
    SECTION("a message type servers never send") {
        f.server.add(proto::FrameType::kRefresh, wire_v1::Refresh()).send();
    }
    SECTION("a body that does not parse, after a good message") {
        // The good message before it was acted on; the rest of the datagram is not.
        f.server.add(proto::FrameType::kImageRequest, image_request("A"))
            .add_body(proto::FrameType::kNak, std::string("\xff\xff\xff", 3))
            .add(proto::FrameType::kDirectoryQuery, wire_v1::DirectoryQuery())
            .send();
        REQUIRE(f.wait_for_events(1));
        f.recorder.events.clear();
    }
    REQUIRE(f.wait_for_drops(malformed, 1));
    CHECK(f.recorder.events.empty());
    f.server.add(proto::FrameType::kImageRequest, image_request("NEXT")).send();
    REQUIRE(f.wait_for_events(1));
    CHECK(f.recorder.events[0].rfind("image NEXT", 0) == 0);
    CHECK(malformed == 1);
}

TEST_CASE("an RTT probe is echoed to the prober, a NOT_FOUND answer to the asker alone",
          "[control_receiver]") {
    Fixture f;
    ControlPeer other(f.receiver.port());
    wire_v1::RttProbe probe;
    probe.set_sent_time_ns(123456789);
    f.server.add(proto::FrameType::kRttProbe, probe).send();
    std::vector<distributor::testing::ReceivedMessage> replies;
    REQUIRE(pump(f.loop, [&] {
        for (auto& reply : f.server.replies()) replies.push_back(std::move(reply));
        return !replies.empty();
    }));
    REQUIRE(replies.size() == 1);
    CHECK(replies[0].type == proto::FrameType::kRttEcho);
    wire_v1::RttProbe echo;
    REQUIRE(echo.ParseFromString(replies[0].body));
    CHECK(echo.sent_time_ns() == 123456789);
    CHECK(f.receiver.counters().rtt_probes == 1);
    CHECK(f.recorder.events.empty());  // answered by the receiver itself

    wire_v1::ItemStatus status;
    status.set_item_name("NOPE");
    status.mutable_status()->set_code(wire_v1::STATUS_NOT_FOUND);
    sockaddr_in asker{};
    asker.sin_family = AF_INET;
    asker.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    asker.sin_port = htons(f.server.port());
    f.receiver.reply_not_found(status, asker);
    replies.clear();
    REQUIRE(pump(f.loop, [&] {
        for (auto& reply : f.server.replies()) replies.push_back(std::move(reply));
        return !replies.empty();
    }));
    REQUIRE(replies.size() == 1);
    CHECK(replies[0].type == proto::FrameType::kItemStatus);
    wire_v1::ItemStatus answer;
    REQUIRE(answer.ParseFromString(replies[0].body));
    CHECK(answer.item_name() == "NOPE");
    CHECK(f.receiver.counters().not_found_replies == 1);
    settle(f.loop);
    CHECK(other.replies().empty());  // the other server heard nothing
}

TEST_CASE("with backbone keys, unsigned and forged control packets are never acted on",
          "[control_receiver]") {
    const PacketSigner signer(std::string(32, 'k'), "");
    const PacketSigner forger(std::string(32, 'f'), "");
    Fixture f(&signer);
    const uint64_t& bad = f.receiver.counters().bad_signatures;
    f.server.add(proto::FrameType::kImageRequest, image_request("UNSIGNED")).send();
    REQUIRE(f.wait_for_drops(bad, 1));
    f.server.add(proto::FrameType::kImageRequest, image_request("FORGED")).send(&forger);
    REQUIRE(f.wait_for_drops(bad, 2));
    CHECK(f.recorder.events.empty());
    f.server.add(proto::FrameType::kImageRequest, image_request("SIGNED")).send(&signer);
    REQUIRE(f.wait_for_events(1));
    CHECK(f.recorder.events[0].rfind("image SIGNED", 0) == 0);
    CHECK(bad == 2);
    CHECK(f.receiver.counters().malformed == 0);
}

TEST_CASE("testing.loss on control receive drops packets before they are read",
          "[control_receiver]") {
    Fixture f(nullptr, LossSettings{1.0, 0, 0, 1});
    f.server.add(proto::FrameType::kDirectoryQuery, wire_v1::DirectoryQuery()).send();
    REQUIRE(f.wait_for_drops(f.receiver.counters().injected_drops, 1));
    CHECK(f.recorder.events.empty());
    CHECK(f.receiver.counters().packets_received == 1);
    CHECK(f.receiver.counters().directory_queries == 0);
}
