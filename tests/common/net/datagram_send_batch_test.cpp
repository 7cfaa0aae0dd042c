// send_datagrams over a real loopback socket: every datagram in order, more
// than one sendmmsg's worth, and one the kernel refuses skipped without
// losing the others.
#include "common/net/datagram_send_batch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <vector>

#include "common/net/udp_socket.h"

using namespace mdcast;

TEST_CASE("send_datagrams sends every datagram in order and reports the one refused",
          "[datagram_send_batch]") {
    const int receiver = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    const int big = 4 << 20;
    setsockopt(receiver, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(receiver, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    socklen_t length = sizeof address;
    getsockname(receiver, reinterpret_cast<sockaddr*>(&address), &length);
    const int sender = socket(AF_INET, SOCK_DGRAM, 0);
    REQUIRE(connect(sender, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);

    constexpr size_t kCount = 150;   // more than one call's worth (64)
    constexpr size_t kRefused = 70;  // larger than any UDP datagram: EMSGSIZE
    std::vector<std::vector<uint8_t>> payloads;
    for (size_t i = 0; i < kCount; ++i) {
        payloads.emplace_back(i == kRefused ? 70000 : 10 + i, static_cast<uint8_t>(i));
    }
    const std::vector<std::span<const uint8_t>> datagrams(payloads.begin(), payloads.end());
    std::vector<uint8_t> sent(kCount, 0);
    send_datagrams(sender, datagrams, sent);
    for (size_t i = 0; i < kCount; ++i) CHECK(sent[i] == (i == kRefused ? 0 : 1));

    DatagramBatch batch(256, 2048);
    size_t expected = 0;
    for (size_t n = batch.receive(receiver); n > 0; n = batch.receive(receiver)) {
        for (size_t i = 0; i < n; ++i, ++expected) {
            if (expected == kRefused) ++expected;
            REQUIRE(batch.datagram(i).size() == 10 + expected);
            CHECK(batch.datagram(i)[0] == static_cast<uint8_t>(expected));
        }
    }
    CHECK(expected == kCount);
    ::close(sender);
    ::close(receiver);
}
