// Repairs a NAK can buy: capped per NAK and per NAK source address, over a
// real BackboneSender multicasting on loopback (TTL 0); and the datagrams of
// one loop pass leaving together at the flush, in sequence order.
#include "distributor/backbone_sender.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "backbone_tap.h"
#include "common/clock.h"
#include "common/net/event_loop.h"
#include "proto/backbone_packet.h"
#include "proto/frame.h"
#include "wire/common.pb.h"

using namespace mdcast;
using mdcast::distributor::BackboneSender;
using mdcast::distributor::heartbeat_postponed_to;
using mdcast::distributor::testing::free_udp_port;

namespace {

BackboneSender::Settings settings(uint32_t per_nak, uint32_t per_source) {
    BackboneSender::Settings s;
    s.endpoints.push_back(
        MulticastEndpoint{"239.255.213.77", free_udp_port(), "127.0.0.1", 0, true});
    s.repair_linger_us = 0;  // every NAK may repair again: only the new limits hold repairs back
    s.max_repairs_per_nak = per_nak;
    s.repairs_per_source_per_s = per_source;
    return s;
}

// `count` data packets, one message each: sequences 1..count.
void send_packets(BackboneSender& sender, int count) {
    wire::v1::ItemStatus status;
    status.set_item_name("ITEM");
    for (int i = 0; i < count; ++i) {
        status.set_item_id(static_cast<uint64_t>(i + 1));
        REQUIRE(sender.send(proto::FrameType::kItemStatus, status));
        sender.flush();
    }
    REQUIRE(sender.next_sequence() == static_cast<uint64_t>(count) + 1);
}

wire::v1::Nak nak(std::initializer_list<std::pair<uint64_t, uint64_t>> ranges) {
    wire::v1::Nak message;
    for (const auto& [from, to] : ranges) {
        auto* range = message.add_ranges();
        range->set_from(from);
        range->set_to(to);
    }
    return message;
}

constexpr uint32_t kServerA = 0x7f000002, kServerB = 0x7f000003;

}  // namespace

TEST_CASE("one NAK buys at most max_repairs_per_nak repairs, over all its ranges",
          "[backbone_sender]") {
    EventLoop loop;
    BackboneSender sender(loop, settings(100, 0), 1);
    send_packets(sender, 600);
    // Several ranges, each under the cap but together far over it.
    sender.on_nak(nak({{1, 81}, {101, 181}, {201, 281}, {301, 601}}), kServerA);
    CHECK(sender.counters().repairs_sent == 100);
    CHECK(sender.counters().nak_sequences_over_cap == 80 * 3 + 300 - 100);
    // One huge range the same.
    sender.on_nak(nak({{1, 601}}), kServerA);
    CHECK(sender.counters().repairs_sent == 200);
    CHECK(sender.counters().nak_sequences_over_cap == 440 + 500);
}

TEST_CASE("each NAK source address has its own repair budget per second", "[backbone_sender]") {
    EventLoop loop;
    BackboneSender sender(loop, settings(1000, 250), 1);
    send_packets(sender, 600);
    const int64_t now = mdcast::monotonic_ns();  // one instant: no refill between the NAKs
    sender.on_nak(nak({{1, 601}}), kServerA, now);
    CHECK(sender.counters().repairs_sent == 250);
    CHECK(sender.counters().repairs_source_limited == 350);
    // The same peer again at once: its second's worth is spent.
    sender.on_nak(nak({{1, 601}}), kServerA, now);
    CHECK(sender.counters().repairs_sent == 250);
    // Another server is not held back by the first one's NAKs.
    sender.on_nak(nak({{1, 101}}), kServerB, now);
    CHECK(sender.counters().repairs_sent == 350);
    CHECK(sender.nak_sources() == 2);
}

// The datagrams filled during one loop pass stay in the sender (and its
// retransmit window) until the flush, then leave together, in sequence order:
// one by one, or cut from one segmentation offload send and padded.
TEST_CASE("the datagrams of one pass leave together at the flush, in order", "[backbone_sender]") {
    const bool offload = GENERATE(false, true);
    CAPTURE(offload);
    EventLoop loop;
    BackboneSender::Settings s = settings(1024, 0);
    s.segmentation_offload = offload;
    s.heartbeat_min_us = 1'000'000;  // only the start-up heartbeat while the test runs
    s.heartbeat_max_ms = 1000;
    UdpSocket receiver = UdpSocket::multicast_receiver(s.endpoints[0], 4 << 20);
    BackboneSender sender(loop, s, 7);
    DatagramBatch batch(256, 2048);
    batch.receive(receiver.fd());  // the start-up heartbeat

    // Frame bodies of 300 to 360 bytes: datagrams of unequal sizes.
    auto frame_of = [](size_t body_bytes) {
        std::vector<uint8_t> frame(proto::kFrameHeaderBytes + body_bytes, 'u');
        proto::encode_frame_header(
            proto::FrameHeader{static_cast<uint32_t>(body_bytes),
                               static_cast<uint16_t>(proto::FrameType::kUpdate), 0},
            frame.data());
        return frame;
    };
    for (int i = 0; i < 200; ++i) REQUIRE(sender.send_frame(frame_of(300 + i % 7 * 10)));
    const uint64_t numbered = sender.next_sequence() - 1;
    REQUIRE(numbered >= 40);
    CHECK(sender.window().packets() == numbered);
    CHECK(batch.receive(receiver.fd()) == 0);  // nothing left before the flush
    CHECK(sender.counters().packets_sent == 0);

    sender.flush();
    CHECK(sender.counters().packets_sent == numbered + 1);  // and the last, partial one
    // Loopback takes the offload: runs of at most 63 datagrams of 1024 bytes
    // (one UDP send), each datagram but a run's last padded to the run's largest.
    CHECK(sender.segmenting() == offload);
    CHECK(sender.segmented_datagrams() == (offload ? numbered + 1 : 0));
    uint64_t next = 1;
    size_t messages = 0;
    size_t padded = 0;
    for (size_t n = batch.receive(receiver.fd()); n > 0; n = batch.receive(receiver.fd())) {
        for (size_t i = 0; i < n; ++i) {
            proto::PacketHeader header;
            REQUIRE(proto::decode_packet_header(batch.datagram(i), header) ==
                    proto::PacketError::kNone);
            CHECK(((header.flags & proto::kPacketFlagPadded) != 0) == offload);
            padded += batch.datagram(i).size() > proto::packet_bytes(header);
            CHECK(header.epoch == 7);
            CHECK(header.sequence == next++);
            messages += header.message_count;
        }
    }
    CHECK(next == numbered + 2);
    CHECK(messages == 200);
    if (!offload) CHECK(padded == 0);
    if (offload) CHECK(padded > 0);
}

TEST_CASE("data pushes a heartbeat due within a quarter interval of it to one interval after it",
          "[backbone_sender]") {
    constexpr int64_t kMin = 1'000'000, kMax = 1'000'000'000;  // 1 ms, 1 s
    // Due 300 µs after the last data: far enough, left alone (no system call).
    CHECK_FALSE(heartbeat_postponed_to(10'000'000, 10'300'000, 9'000'000, kMin, kMax));
    // Due 200 µs after it: pushed to 1 ms after the data.
    CHECK(heartbeat_postponed_to(10'000'000, 10'200'000, 9'000'000, kMin, kMax) == 11'000'000);
    // Overdue (the loop was busy): data is going out, which tells the servers more.
    CHECK(heartbeat_postponed_to(10'000'000, 9'900'000, 9'000'000, kMin, kMax) == 11'000'000);
    // Never past heartbeat_max_ms after the last heartbeat...
    CHECK(heartbeat_postponed_to(10'000'000, 10'100'000, 10'500'000 - kMax, kMin, kMax) ==
          10'500'000);
    // ...and when that is what is due, the timer is left to send it.
    CHECK_FALSE(heartbeat_postponed_to(10'000'000, 10'100'000, 10'100'000 - kMax, kMin, kMax));
}

TEST_CASE("heartbeats keep heartbeat_max_ms while data flows without a pause",
          "[backbone_sender]") {
    EventLoop loop;
    BackboneSender::Settings s = settings(1024, 0);
    s.heartbeat_min_us = 1000;
    s.heartbeat_max_ms = 20;
    BackboneSender sender(loop, s, 1);
    const uint64_t at_start = sender.counters().heartbeats_sent;  // the one sent at start-up
    wire::v1::ItemStatus status;
    status.set_item_name("ITEM");
    const int64_t start = monotonic_ns();
    Timer data(loop, [&] {  // a packet every 100 µs, well inside heartbeat_min_us
        status.set_item_id(sender.next_sequence());
        REQUIRE(sender.send(proto::FrameType::kItemStatus, status));
        sender.flush();
        if (monotonic_ns() - start >= 110'000'000) loop.stop();
    });
    data.start_periodic(std::chrono::microseconds(100));
    loop.run();
    // About five in 110 ms: at least one per heartbeat_max_ms, never postponed past it.
    CHECK(sender.counters().heartbeats_sent - at_start >= 4);
}
