// Tests for tools/capture/capture_file.h, backbone_tally.h and
// tools/replay/capture_timeline.h: frames built and parsed back, files written,
// rotated and read back with nanosecond times, gaps counted and filled, a
// capture put back in send order, and a jump in its times cut to the longest gap.
#include "tools/capture/capture_file.h"

#include <arpa/inet.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "proto/backbone_packet.h"
#include "proto/limits.h"
#include "tools/capture/backbone_tally.h"
#include "tools/replay/capture_timeline.h"
#include "wire/backbone.pb.h"
#include "wire/common.pb.h"

namespace {

using namespace mdcast;
using namespace mdcast::tools;

constexpr uint64_t kEpoch = (uint64_t{3} << 48) | 1000;

sockaddr_in address(const char* ip, uint16_t port) {
    sockaddr_in out{};
    out.sin_family = AF_INET;
    out.sin_port = htons(port);
    inet_pton(AF_INET, ip, &out.sin_addr);
    return out;
}

// A data packet of `sequence` with one update of `item` (or a heartbeat).
std::vector<uint8_t> data_packet(uint64_t sequence, uint64_t item, bool repair = false) {
    proto::PacketBuilder builder(1400);
    wire::v1::Update update;
    update.set_item_id(item);
    update.set_item_seq(sequence);
    builder.add(proto::FrameType::kUpdate, update);
    const auto bytes = builder.finish(proto::PacketType::kData, kEpoch, sequence);
    std::vector<uint8_t> out(bytes.begin(), bytes.end());
    proto::set_packet_retransmit_flag(out, repair);
    return out;
}

std::vector<uint8_t> heartbeat(uint64_t next_sequence) {
    proto::PacketBuilder builder(1400);
    wire::v1::Heartbeat beat;
    beat.set_next_sequence(next_sequence);
    builder.add(proto::FrameType::kHeartbeat, beat);
    const auto bytes = builder.finish(proto::PacketType::kHeartbeat, kEpoch, next_sequence);
    return {bytes.begin(), bytes.end()};
}

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() /
            ("mdcast-capture-test-" + std::to_string(getpid()) + "-" + name))
        .string();
}

}  // namespace

TEST_CASE("a datagram's frame parses back to its addresses, ports and payload", "[capture]") {
    const std::vector<uint8_t> payload = data_packet(7, 1);
    CapturedDatagram datagram;
    datagram.source = address("127.0.0.1", 40001);
    datagram.destination = address("239.1.2.3", 15001);
    datagram.payload = payload;
    std::vector<uint8_t> frame;
    REQUIRE(build_udp_frame(datagram, 9, frame));
    REQUIRE(frame.size() == kFrameOverheadBytes + payload.size());
    CHECK(frame[0] == 0x01);  // the group's multicast MAC
    CHECK(frame[5] == 3);

    CapturedDatagram parsed;
    REQUIRE(parse_udp_frame(DLT_EN10MB, frame, parsed));
    CHECK(parsed.source.sin_addr.s_addr == datagram.source.sin_addr.s_addr);
    CHECK(ntohs(parsed.source.sin_port) == 40001);
    CHECK(parsed.destination.sin_addr.s_addr == datagram.destination.sin_addr.s_addr);
    CHECK(ntohs(parsed.destination.sin_port) == 15001);
    CHECK(std::vector<uint8_t>(parsed.payload.begin(), parsed.payload.end()) == payload);
    // Bare IPv4 (LINKTYPE_RAW) is read too.
    REQUIRE(parse_udp_frame(DLT_RAW, std::span(frame).subspan(kEthernetHeaderBytes), parsed));
    CHECK(parsed.payload.size() == payload.size());
}

TEST_CASE("frames that are not whole UDP datagrams over IPv4 are refused", "[capture]") {
    const std::vector<uint8_t> payload(100, 0xAB);
    CapturedDatagram datagram;
    datagram.payload = payload;
    std::vector<uint8_t> frame;
    REQUIRE(build_udp_frame(datagram, 1, frame));
    CapturedDatagram parsed;
    std::vector<uint8_t> cut(frame.begin(), frame.end() - 1);
    CHECK_FALSE(parse_udp_frame(DLT_EN10MB, cut, parsed));  // shorter than its IP length
    auto tcp = frame;
    tcp[kEthernetHeaderBytes + 9] = 6;
    CHECK_FALSE(parse_udp_frame(DLT_EN10MB, tcp, parsed));
    auto fragment = frame;
    fragment[kEthernetHeaderBytes + 6] = 0x20;  // more fragments
    CHECK_FALSE(parse_udp_frame(DLT_EN10MB, fragment, parsed));
    auto ipv6 = frame;
    ipv6[12] = 0x86;
    CHECK_FALSE(parse_udp_frame(DLT_EN10MB, ipv6, parsed));
    CHECK_FALSE(parse_udp_frame(DLT_LINUX_SLL, frame, parsed));
    const std::vector<uint8_t> too_big(proto::kMaxDatagramBytes + 1);
    datagram.payload = too_big;
    CHECK_FALSE(build_udp_frame(datagram, 1, frame));
}

TEST_CASE("a capture is read back with nanosecond times, rotation keeps the newest files",
          "[capture]") {
    const std::string path = temp_path("rot.pcap");
    std::vector<std::string> files;
    {
        CaptureWriter writer(path, 2000, 2);
        for (uint64_t i = 1; i <= 40; ++i) {
            const auto payload = data_packet(i, 1);
            CapturedDatagram datagram;
            datagram.time_ns = 1'700'000'000'123'456'789 + static_cast<int64_t>(i);
            datagram.source = address("127.0.0.1", 1);
            datagram.destination = address("239.1.1.1", 2);
            datagram.payload = payload;
            writer.write(datagram);
        }
        writer.close();
        files = writer.files();
        CHECK(writer.frames() == 40);
    }
    REQUIRE(files.size() == 2);
    CHECK_FALSE(std::filesystem::exists(path));
    CHECK(files[0].find("rot.") != std::string::npos);
    uint64_t read = 0;
    int64_t last = 0;
    for (const std::string& file : files) {
        CHECK(std::filesystem::file_size(file) <= 2000);
        CaptureReader reader(file);
        CapturedDatagram datagram;
        while (reader.next(datagram)) {
            ++read;
            CHECK(datagram.time_ns > last);
            CHECK(datagram.time_ns % 1000 != 0);  // nanoseconds survived
            last = datagram.time_ns;
        }
        std::filesystem::remove(file);
    }
    CHECK(read > 0);
    CHECK(read < 40);
    CHECK(last == 1'700'000'000'123'456'789 + 40);
    CHECK_THROWS(CaptureReader(temp_path("missing.pcap")));
}

TEST_CASE("the tally counts gaps, fills them with repairs and drops duplicates", "[capture]") {
    BackboneTally tally;
    tally.add(heartbeat(1));
    tally.add(data_packet(1, 10));
    tally.add(data_packet(2, 11));
    tally.add(data_packet(5, 10));        // 3 and 4 missing
    tally.add(data_packet(3, 10, true));  // a repair fills 3
    tally.add(data_packet(3, 10, true));  // again: a duplicate
    tally.add(heartbeat(8));              // 6 and 7 never came
    tally.add(std::vector<uint8_t>(10, 0));
    const auto sources = tally.sources();
    REQUIRE(sources.size() == 1);
    CHECK(sources[0].source == 3);
    CHECK(sources[0].gaps == 2);
    CHECK(sources[0].missing == 4);
    CHECK(sources[0].filled == 1);
    CHECK(sources[0].duplicates == 1);
    CHECK(tally.unfilled() == 3);
    CHECK(tally.counts().updates == 4);
    CHECK(tally.counts().repairs == 2);
    CHECK(tally.counts().heartbeats == 2);
    CHECK(tally.counts().malformed == 1);
    CHECK(tally.items() == 2);
    CHECK(tally.json_fields().find("\"gaps\":2") != std::string::npos);
}

TEST_CASE("a hostile capture's far sequence jumps are malformed, never billions missing",
          "[capture]") {
    // Found by capture_file_fuzz: a sequence of 2^64 - 1 wrapped the edge to 0
    // and the missing count around 2^64, so more was "filled" than was missing.
    BackboneTally tally;
    tally.add(data_packet(1, 10));
    tally.add(data_packet(UINT64_MAX, 10));
    tally.add(data_packet(uint64_t{1} << 40, 10));
    tally.add(heartbeat(uint64_t{1} << 40));
    tally.add(data_packet(5, 10));  // 2, 3 and 4 missing
    tally.add(data_packet(3, 10));  // 3 filled
    const auto sources = tally.sources();
    REQUIRE(sources.size() == 1);
    CHECK(sources[0].next_sequence == 6);
    CHECK(sources[0].missing == 3);
    CHECK(sources[0].filled == 1);
    CHECK(tally.unfilled() == 2);
    CHECK(tally.counts().malformed == 3);
    CHECK(tally.counts().updates == 3);
}

TEST_CASE("the timeline puts repairs back in sequence order and drops copies", "[capture]") {
    CaptureTimeline timeline;
    timeline.add(100, data_packet(1, 10));
    timeline.add(200, data_packet(3, 10));
    timeline.add(300, data_packet(4, 10));
    timeline.add(900, data_packet(2, 10, true));  // repaired late
    timeline.add(950, data_packet(2, 10, true));  // a second repair
    timeline.add(960, heartbeat(7));
    timeline.add(990, data_packet(6, 10));  // 5 never came
    timeline.finish(1'000'000);
    std::vector<uint64_t> order;
    for (const auto& packet : timeline.packets()) {
        proto::PacketHeader header;
        REQUIRE(proto::decode_packet_header(packet.datagram, header) == proto::PacketError::kNone);
        order.push_back(header.sequence);
    }
    CHECK(order == std::vector<uint64_t>{1, 2, 3, 4, 6});
    CHECK(timeline.packets()[1].time_ns == 200);  // no later than the packet after it
    CHECK(timeline.counts().duplicates == 1);
    CHECK(timeline.counts().missing == 1);
    CHECK(timeline.counts().other == 1);
    CHECK(timeline.first_ns() == 100);
    CHECK(timeline.last_ns() == 990);
}

TEST_CASE("a jump in the capture's times is cut to the longest gap", "[capture]") {
    CaptureTimeline timeline;
    const int64_t jump = int64_t{1} << 62;  // 146 years: mdcast-replay would wait for it
    // From -jump to +jump is 2^63 ns, more than int64_t holds.
    timeline.add(-jump, data_packet(1, 10));
    timeline.add(1'000, data_packet(2, 10));
    timeline.add(2'000, data_packet(3, 10));
    timeline.add(jump, data_packet(4, 10));
    timeline.add(jump + 500, data_packet(5, 10));
    timeline.finish(10'000);
    std::vector<int64_t> times;
    for (const auto& packet : timeline.packets()) times.push_back(packet.time_ns);
    CHECK(times == std::vector<int64_t>{-jump, -jump + 10'000, -jump + 11'000, -jump + 21'000,
                                        -jump + 21'500});
    CHECK(timeline.counts().gaps_cut == 2);
    CHECK(timeline.last_ns() - timeline.first_ns() == 21'500);
}
