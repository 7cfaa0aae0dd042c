// BackboneReceiver fed datagrams directly (its socket path is the integration
// tests'): validation before anything is held, delivery in order and once per
// distributor (several messages to a packet, held after a gap or not),
// epochs (a restart resets, a replayed older epoch is refused), the
// max_sources bound and signatures. Control packets it would send are dropped
// by its control socket's loss, so nothing leaves the process.
#include "server/backbone/backbone_receiver.h"

#include <arpa/inet.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "proto/backbone_packet.h"
#include "proto/limits.h"
#include "proto/packet_signer.h"
#include "proto/source_ids.h"
#include "wire/backbone.pb.h"
#include "wire/common.pb.h"

using namespace mdcast;
namespace wire_v1 = mdcast::wire::v1;

namespace {

struct Recorder final : server::Upstream::Handler {
    std::vector<std::pair<uint16_t, std::string>> messages;  // source, item name
    std::vector<std::tuple<uint16_t, uint64_t, uint64_t>> resets;
    void on_upstream_message(uint16_t source, const proto::Frame& frame) override {
        wire_v1::ItemStatus status;
        REQUIRE(status.ParseFromArray(frame.body.data(), static_cast<int>(frame.body.size())));
        messages.emplace_back(source, status.item_name());
    }
    void on_source_loss(uint16_t, const std::string&) override {}
    void on_source_reset(uint16_t source, uint64_t previous, uint64_t epoch) override {
        resets.emplace_back(source, previous, epoch);
    }
    void on_source_ready(uint16_t) override {}
    void on_source_silent(uint16_t, bool) override {}
    void on_source_answer(uint16_t, const proto::Frame&) override {}
    void on_source_post_ack(uint16_t source, const wire_v1::PostAck& ack) override {
        post_acks.emplace_back(source, ack.post_id());
    }
    std::vector<std::pair<uint16_t, uint64_t>> post_acks;  // source, post id

    std::vector<std::string> names() const {
        std::vector<std::string> out;
        for (const auto& [source, name] : messages) out.push_back(name);
        return out;
    }
};

server::BackboneReceiver::Settings settings(size_t max_sources = 4,
                                            std::shared_ptr<const PacketSigner> signer = nullptr) {
    server::BackboneReceiver::Settings s;
    s.groups.push_back({"239.255.91.18", 0, "127.0.0.1", 0, true});
    s.max_sources = static_cast<uint32_t>(max_sources);
    s.recovery.max_buffered_bytes = 1 << 20;
    s.recovery.max_gap_packets = 1000;
    s.control_send_loss.rate = 1.0;  // never send
    s.signer = std::move(signer);
    return s;
}

// A data packet carrying one ItemStatus named `name`.
std::vector<uint8_t> data_packet(uint64_t epoch, uint64_t sequence, const std::string& name,
                                 const PacketSigner* signer = nullptr) {
    proto::PacketBuilder builder(1400, signer ? kSignatureBytes : 0);
    wire_v1::ItemStatus status;
    status.set_item_name(name);
    builder.add(proto::FrameType::kItemStatus, status);
    if (!signer) {
        const auto packet = builder.finish(proto::PacketType::kData, epoch, sequence);
        return {packet.begin(), packet.end()};
    }
    const auto packet = builder.finish_with_trailer(proto::PacketType::kData, epoch, sequence);
    signer->sign_datagram(packet);
    return {packet.begin(), packet.end()};
}

// A data packet carrying one ItemStatus per name, several messages to a packet.
std::vector<uint8_t> packet_of(uint64_t epoch, uint64_t sequence,
                               const std::vector<std::string>& names) {
    proto::PacketBuilder builder(proto::kDefaultDatagramBytes);
    for (const auto& name : names) {
        wire_v1::ItemStatus status;
        status.set_item_name(name);
        builder.add(proto::FrameType::kItemStatus, status);
    }
    const auto packet = builder.finish(proto::PacketType::kData, epoch, sequence);
    return {packet.begin(), packet.end()};
}

struct Fixture {
    EventLoop loop;
    Recorder recorder;
    server::BackboneReceiver receiver;
    sockaddr_in from{};
    int64_t now = monotonic_ns();

    explicit Fixture(const server::BackboneReceiver::Settings& s = settings())
        : receiver(loop, s, recorder) {
        from.sin_family = AF_INET;
        from.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        from.sin_port = htons(9);
    }
    void feed(const std::vector<uint8_t>& datagram) {
        now += 1000;
        receiver.handle_datagram(datagram, from, false, now);
    }
};

const uint64_t kEpoch = proto::make_epoch(1, 1'000'000);

}  // namespace

TEST_CASE("a distributor's data is delivered in order and once, a reordered packet waiting",
          "[backbone_receiver]") {
    Fixture f;
    f.feed(data_packet(kEpoch, 1, "A"));
    f.feed(data_packet(kEpoch, 3, "C"));  // 2 is late: C waits for it
    CHECK(f.recorder.names() == std::vector<std::string>{"A"});
    f.feed(data_packet(kEpoch, 2, "B"));
    f.feed(data_packet(kEpoch, 2, "B"));  // a duplicate (a repair that crossed the original)
    CHECK(f.recorder.names() == std::vector<std::string>{"A", "B", "C"});
    CHECK(f.recorder.messages[0].first == 1);
    CHECK(f.receiver.sources() == std::vector<uint16_t>{1});
    CHECK(f.receiver.counters().packets_received == 4);
    REQUIRE(f.recorder.resets.size() == 1);  // first heard: previous epoch 0
    CHECK(std::get<1>(f.recorder.resets[0]) == 0);
}

// The messages are found once, on arrival; a held packet's go with its copy.
TEST_CASE("the messages of a packet held after a gap are delivered with it, once",
          "[backbone_receiver]") {
    Fixture f;
    f.feed(packet_of(kEpoch, 1, {"A1", "A2"}));
    f.feed(packet_of(kEpoch, 3, {"C1", "C2", "C3"}));
    f.feed(packet_of(kEpoch, 3, {"X"}));  // another packet 3: the first one is held
    CHECK(f.recorder.names() == std::vector<std::string>{"A1", "A2"});
    f.feed(packet_of(kEpoch, 2, {"B1"}));
    CHECK(f.recorder.names() == std::vector<std::string>{"A1", "A2", "B1", "C1", "C2", "C3"});
    CHECK(f.receiver.counters().messages_received == 6);
}

TEST_CASE("a restart drops what the old epoch held and delivers the new one's messages",
          "[backbone_receiver]") {
    Fixture f;
    f.feed(packet_of(kEpoch, 1, {"A"}));
    f.feed(packet_of(kEpoch, 3, {"held"}));
    const uint64_t restarted = proto::make_epoch(1, 2'000'000);
    f.feed(packet_of(restarted, 3, {"N1", "N2"}));  // the new epoch joins at its live edge
    f.feed(packet_of(restarted, 4, {"N3"}));
    CHECK(f.recorder.names() == std::vector<std::string>{"A", "N1", "N2", "N3"});
}

TEST_CASE("malformed datagrams are counted and deliver nothing", "[backbone_receiver]") {
    Fixture f;
    auto bad_magic = data_packet(kEpoch, 1, "A");
    bad_magic[0] ^= 0xff;
    f.feed(bad_magic);
    auto short_one = data_packet(kEpoch, 1, "A");
    short_one.resize(10);
    f.feed(short_one);
    auto cut_message = data_packet(kEpoch, 1, "A");
    cut_message.pop_back();  // the payload length no longer matches
    f.feed(cut_message);
    f.feed(data_packet(proto::make_epoch(0, 1'000'000), 1, "A"));  // no distributor id
    f.receiver.handle_datagram(data_packet(kEpoch, 1, "A"), f.from, true, f.now);  // truncated
    CHECK(f.recorder.messages.empty());
    CHECK(f.receiver.counters().malformed_packets == 5);
    CHECK(f.receiver.counters().truncated_packets == 1);
    CHECK(f.receiver.sources().empty());
    f.feed(data_packet(kEpoch, 1, "A"));  // and a good one still goes through
    CHECK(f.recorder.names() == std::vector<std::string>{"A"});
}

TEST_CASE("a restart's newer epoch resets the source, a replayed older one is refused",
          "[backbone_receiver]") {
    Fixture f;
    const uint64_t restarted = proto::make_epoch(1, 2'000'000);
    f.feed(data_packet(kEpoch, 1, "old"));
    f.feed(data_packet(restarted, 1, "new"));
    REQUIRE(f.recorder.resets.size() == 2);
    CHECK(f.recorder.resets[1] == std::tuple<uint16_t, uint64_t, uint64_t>{1, kEpoch, restarted});
    f.feed(data_packet(kEpoch, 2, "replayed"));
    f.feed(data_packet(restarted, 2, "next"));
    CHECK(f.recorder.names() == std::vector<std::string>{"old", "new", "next"});
    CHECK(f.receiver.counters().stale_epochs == 1);
    CHECK(f.recorder.resets.size() == 2);  // the replay switched nothing back
}

TEST_CASE("distributors beyond max_sources are dropped, the first one kept",
          "[backbone_receiver]") {
    Fixture f(settings(1));
    f.feed(data_packet(kEpoch, 1, "one"));
    f.feed(data_packet(proto::make_epoch(2, 1'000'000), 1, "two"));
    f.feed(data_packet(kEpoch, 2, "one again"));
    CHECK(f.recorder.names() == std::vector<std::string>{"one", "one again"});
    CHECK(f.receiver.counters().foreign_sources == 1);
    CHECK(f.receiver.sources() == std::vector<uint16_t>{1});
}

TEST_CASE("with a key, unsigned and forged packets are dropped", "[backbone_receiver]") {
    const auto signer = std::make_shared<const PacketSigner>(std::string(32, 'k'), "");
    const PacketSigner other(std::string(32, 'x'), "");
    Fixture f(settings(4, signer));
    f.feed(data_packet(kEpoch, 1, "unsigned"));
    f.feed(data_packet(kEpoch, 1, "forged", &other));
    CHECK(f.recorder.messages.empty());
    CHECK(f.receiver.counters().bad_signatures == 2);
    f.feed(data_packet(kEpoch, 1, "signed", signer.get()));
    CHECK(f.recorder.names() == std::vector<std::string>{"signed"});
}

TEST_CASE("a post goes to a ready distributor stamped with the server's id, its answer comes back",
          "[backbone_receiver][posts]") {
    Fixture f;
    wire_v1::Post post;
    post.set_post_id(7);
    CHECK_FALSE(f.receiver.send_post(1, post));  // not heard yet: nowhere to send it
    proto::PacketBuilder builder(proto::kDefaultDatagramBytes);
    wire_v1::Heartbeat heartbeat;
    heartbeat.set_next_sequence(1);
    heartbeat.set_control_port(9);  // the fixture's `from` port
    builder.add(proto::FrameType::kHeartbeat, heartbeat);
    const auto beat = builder.finish(proto::PacketType::kHeartbeat, kEpoch, 0);
    f.feed({beat.begin(), beat.end()});
    REQUIRE(f.receiver.ready(1));
    CHECK(f.receiver.send_post(1, post));
    CHECK(post.server_id() != 0);
    wire_v1::Post too_large = post;
    too_large.mutable_fields()->add_fields()->set_string_value(std::string(2000, 'x'));
    CHECK_FALSE(f.receiver.send_post(1, too_large));  // more than one control datagram

    proto::PacketBuilder reply(proto::kDefaultDatagramBytes);
    wire_v1::PostAck ack;
    ack.set_post_id(7);
    reply.add(proto::FrameType::kPostAck, ack);
    const auto answer = reply.finish(proto::PacketType::kControlReply, 0, 0);
    sockaddr_in stranger = f.from;
    stranger.sin_port = htons(10);
    f.receiver.handle_control_reply({answer.begin(), answer.end()}, stranger, f.now);
    CHECK(f.recorder.post_acks.empty());  // not from the distributor's control address
    f.receiver.handle_control_reply({answer.begin(), answer.end()}, f.from, f.now);
    CHECK(f.recorder.post_acks == std::vector<std::pair<uint16_t, uint64_t>>{{1, 7}});
}
