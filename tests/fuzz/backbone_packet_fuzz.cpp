// proto/backbone_packet and proto/packet_signer on hostile datagrams: the header
// decoder (padding: zeros only, cut off leaving the same packet), the message walk (data, control
// and heartbeat message sets), and the signature check. A datagram we sign must verify; one changed
// byte must not.
#include <cstdlib>
#include <vector>

#include "fuzz_input.h"
#include "proto/backbone_packet.h"
#include "proto/packet_signer.h"

using namespace mdcast::proto;

namespace {

void walk(std::span<const uint8_t> datagram, const PacketHeader& header, FrameTypeSet accepted) {
    PacketMessageIterator messages(datagram, header, accepted);
    Frame frame;
    size_t count = 0;
    while (messages.next(frame) == PacketMessageIterator::Result::kFrame) {
        if (frame.whole.data() < datagram.data() ||
            frame.whole.data() + frame.whole.size() > datagram.data() + datagram.size() ||
            ++count > header.message_count)
            std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const mdcast::PacketSigner signer("fuzzing-key-0123456789abcdef",
                                             "previous-key-0123456789");
    const std::span<const uint8_t> datagram(data, size);
    PacketHeader header;
    if (decode_packet_header(datagram, header) == PacketError::kNone) {
        // The packet without its padding decodes alike, and what was cut is zeros.
        const size_t bytes = packet_bytes(header);
        PacketHeader trimmed;
        if (bytes > size ||
            decode_packet_header(datagram.first(bytes), trimmed) != PacketError::kNone ||
            trimmed.payload_bytes != header.payload_bytes || trimmed.flags != header.flags)
            std::abort();
        for (size_t i = bytes; i < size; ++i)
            if (data[i] != 0) std::abort();
        walk(datagram, header, kBackboneDataTypes);
        walk(datagram, header, kBackboneControlTypes);
        walk(datagram, header, kBackboneControlReplyTypes);
    }
    (void)signer.verify_datagram(datagram);
    if (size < kPacketHeaderBytes + kPacketTrailerBytes) return 0;
    std::vector<uint8_t> copy(data, data + size);
    signer.sign_datagram(copy);
    if (!signer.verify_datagram(copy)) std::abort();
    copy[data[0] % (size - kPacketTrailerBytes)] ^= 0x01;
    if (signer.verify_datagram(copy)) std::abort();
    return 0;
}
