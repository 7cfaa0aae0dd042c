#include "proto/packet_signer.h"

#include <catch2/catch.hpp>

#include "proto/backbone_packet.h"
#include "wire/backbone.pb.h"

using namespace mdcast;

namespace {
const std::string kKey = "0123456789abcdef0123456789abcdef";
const std::string kOldKey = "fedcba9876543210fedcba9876543210";

std::vector<uint8_t> signed_heartbeat(const PacketSigner& signer) {
    proto::PacketBuilder packet(256, kSignatureBytes);
    wire::v1::Heartbeat heartbeat;
    heartbeat.set_next_sequence(7);
    heartbeat.set_control_port(1234);
    packet.add(proto::FrameType::kHeartbeat, heartbeat);
    const auto datagram =
        finish_packet(packet, proto::PacketType::kHeartbeat, uint64_t{1} << 48 | 5, 7, &signer);
    return {datagram.begin(), datagram.end()};
}
}  // namespace

TEST_CASE("a signed packet verifies and decodes, any changed byte is refused", "[packet_signer]") {
    PacketSigner signer(kKey, "");
    auto datagram = signed_heartbeat(signer);
    proto::PacketHeader header;
    REQUIRE(proto::decode_packet_header(datagram, header) == proto::PacketError::kNone);
    CHECK((header.flags & proto::kPacketFlagSigned) != 0);
    CHECK(header.payload_bytes == datagram.size() - proto::kPacketHeaderBytes - kSignatureBytes);
    CHECK(signer.verify_datagram(datagram));
    for (size_t i = 0; i < datagram.size(); ++i) {
        auto forged = datagram;
        forged[i] ^= 0x01;
        CHECK_FALSE(signer.verify_datagram(forged));
    }
}

TEST_CASE("another key is refused, the previous key is accepted during a rollover",
          "[packet_signer]") {
    PacketSigner old_signer(kOldKey, "");
    const auto from_old = signed_heartbeat(old_signer);
    CHECK_FALSE(PacketSigner(kKey, "").verify_datagram(from_old));
    CHECK(PacketSigner(kKey, kOldKey).verify_datagram(from_old));
}

TEST_CASE("short keys and missing key files are refused", "[packet_signer]") {
    CHECK_THROWS(PacketSigner("short", ""));
    CHECK_THROWS(PacketSigner::load_key("/nonexistent/backbone.key"));
}

TEST_CASE("re-signing after setting the retransmit flag keeps the packet valid",
          "[packet_signer]") {
    PacketSigner signer(kKey, "");
    auto datagram = signed_heartbeat(signer);
    datagram[5] = static_cast<uint8_t>(proto::PacketType::kData);  // only data packets are repaired
    signer.sign_datagram(datagram);
    proto::set_packet_retransmit_flag(datagram, true);
    CHECK_FALSE(signer.verify_datagram(datagram));  // the flag is covered
    signer.sign_datagram(datagram);
    CHECK(signer.verify_datagram(datagram));
    proto::PacketHeader header;
    REQUIRE(proto::decode_packet_header(datagram, header) == proto::PacketError::kNone);
    CHECK(header.flags == (proto::kPacketFlagSigned | proto::kPacketFlagRetransmit));
}

TEST_CASE("a padded signed data packet verifies once its padding is cut off", "[packet_signer]") {
    PacketSigner signer(kKey, "");
    proto::PacketBuilder packet(1400, kSignatureBytes, /*padded=*/true);
    wire::v1::Heartbeat body;  // any message: only the bytes matter here
    body.set_next_sequence(9);
    packet.add(proto::FrameType::kHeartbeat, body);
    const auto signed_bytes =
        finish_packet(packet, proto::PacketType::kData, uint64_t{1} << 48 | 5, 9, &signer);
    std::vector<uint8_t> datagram(signed_bytes.begin(), signed_bytes.end());
    datagram.resize(1400, 0);  // as a segmentation offload run pads it
    proto::PacketHeader header;
    REQUIRE(proto::decode_packet_header(datagram, header) == proto::PacketError::kNone);
    CHECK(header.flags == (proto::kPacketFlagSigned | proto::kPacketFlagPadded));
    CHECK(proto::packet_bytes(header) == signed_bytes.size());
    CHECK_FALSE(signer.verify_datagram(datagram));  // the trailer is not at the end
    CHECK(signer.verify_datagram(std::span(datagram).first(proto::packet_bytes(header))));
}
