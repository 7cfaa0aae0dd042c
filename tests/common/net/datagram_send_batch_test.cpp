// DatagramBatchSender over a real loopback socket, with and without UDP
// segmentation offload: every datagram in order (padded with zeros only where
// the offload cut a run), more than one call's worth, one the kernel refuses
// skipped without losing the others, and a socket that refuses the offload
// falling back to one datagram each.
#include "common/net/datagram_send_batch.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <vector>

#include "common/net/udp_socket.h"

using namespace mdcast;

namespace {

// A bound loopback receiver and a sender connected to it.
struct LoopbackPair {
    UdpSocket receiver = UdpSocket::unicast("127.0.0.1", 0, 8 << 20);
    int sender = socket(AF_INET, SOCK_DGRAM, 0);
    LoopbackPair() {
        const sockaddr_in address = receiver.local_address();
        REQUIRE(connect(sender, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
    }
    ~LoopbackPair() { ::close(sender); }
};

// Payload i: 10 + i bytes of value i (`refused`: larger than any UDP datagram).
std::vector<std::vector<uint8_t>> payloads(size_t count, size_t refused) {
    std::vector<std::vector<uint8_t>> out;
    for (size_t i = 0; i < count; ++i) {
        out.emplace_back(i == refused ? 70000 : 10 + i, static_cast<uint8_t>(i));
    }
    return out;
}

// Receives everything and checks it against payloads(count, refused): each in
// order, exact or (`padded`) followed by zeros only. Returns how many were padded.
size_t receive_all(int fd, size_t count, size_t refused, bool padded) {
    DatagramBatch batch(256, 2048);
    size_t expected = 0;
    size_t padded_count = 0;
    for (size_t n = batch.receive(fd); n > 0; n = batch.receive(fd)) {
        for (size_t i = 0; i < n; ++i, ++expected) {
            if (expected == refused) ++expected;
            const auto datagram = batch.datagram(i);
            const size_t size = 10 + expected;
            REQUIRE(datagram.size() >= size);
            if (!padded) REQUIRE(datagram.size() == size);
            CHECK(std::all_of(datagram.begin(), datagram.begin() + size,
                              [&](uint8_t b) { return b == static_cast<uint8_t>(expected); }));
            CHECK(std::all_of(datagram.begin() + size, datagram.end(),
                              [](uint8_t b) { return b == 0; }));
            padded_count += datagram.size() > size;
        }
    }
    CHECK(expected == count);
    return padded_count;
}

}  // namespace

TEST_CASE("DatagramBatchSender sends every datagram in order and reports the one refused",
          "[datagram_send_batch]") {
    const bool segment = GENERATE(false, true);
    CAPTURE(segment);
    LoopbackPair pair;
    constexpr size_t kCount = 150;   // more than one call's worth (64) either way
    constexpr size_t kRefused = 70;  // larger than any UDP datagram: EMSGSIZE
    const auto data = payloads(kCount, kRefused);
    const std::vector<std::span<const uint8_t>> datagrams(data.begin(), data.end());
    std::vector<uint8_t> sent(kCount, 0);
    DatagramBatchSender sender(pair.sender, segment);
    sender.send(datagrams, sent);
    for (size_t i = 0; i < kCount; ++i) CHECK(sent[i] == (i == kRefused ? 0 : 1));
    const size_t padded = receive_all(pair.receiver.fd(), kCount, kRefused, segment);
    if (segment) {
        // Loopback takes the offload. Runs of at most 64: 0-63, 64-69, the refused
        // one alone, 71-134, 135-149. Every datagram but a run's last is padded to
        // the run's largest (sizes grow, so that is the run's last one).
        CHECK(sender.segmenting());
        CHECK(sender.offload_refusal() == 0);
        CHECK(sender.segmented_datagrams() == kCount - 1);
        CHECK(padded == kCount - 1 - 4);
        // Run 0-63 pads to 73 bytes, 64-69 to 79, 71-134 to 144, 135-149 to 159.
        auto pad = [](size_t first, size_t last) {  // sizes 10 + i, padded to the last's
            size_t total = 0;
            for (size_t i = first; i < last; ++i) total += last - i;
            return total;
        };
        CHECK(sender.padding_bytes() == pad(0, 63) + pad(64, 69) + pad(71, 134) + pad(135, 149));
    } else {
        CHECK(padded == 0);
        CHECK(sender.segmented_datagrams() == 0);
        CHECK(sender.padding_bytes() == 0);
    }
}

TEST_CASE("DatagramBatchSender falls back to one datagram each when the offload is refused",
          "[datagram_send_batch]") {
    LoopbackPair pair;
    // A socket that sends without UDP checksums cannot be segmented: EINVAL.
    const int on = 1;
    REQUIRE(setsockopt(pair.sender, SOL_SOCKET, SO_NO_CHECK, &on, sizeof on) == 0);
    constexpr size_t kCount = 20;
    const auto data = payloads(kCount, kCount);
    const std::vector<std::span<const uint8_t>> datagrams(data.begin(), data.end());
    std::vector<uint8_t> sent(kCount, 0);
    DatagramBatchSender sender(pair.sender, true);
    sender.send(datagrams, sent);
    CHECK(std::all_of(sent.begin(), sent.end(), [](uint8_t s) { return s == 1; }));
    CHECK_FALSE(sender.segmenting());
    CHECK(sender.offload_refusal() == EINVAL);
    CHECK(receive_all(pair.receiver.fd(), kCount, kCount, false) == 0);
}
