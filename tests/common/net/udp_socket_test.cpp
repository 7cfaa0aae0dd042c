// DatagramBatch over real loopback sockets: the kernel drop count it reports
// belongs to the socket it just read, never to another one it served before;
// a run sent with segmentation offload arrives as one message on a coalescing
// socket (UDP_GRO) and the batch presents its datagrams one by one.
#include "common/net/udp_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <vector>

#include "common/net/datagram_send_batch.h"

using namespace mdcast;

namespace {

// A bound loopback UDP socket that reports drops (SO_RXQ_OVFL), with the
// smallest receive buffer the kernel allows.
struct Receiver {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    sockaddr_in address{};
    Receiver() {
        const int one = 1, small = 1;
        setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one);
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
        socklen_t length = sizeof address;
        getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    }
    ~Receiver() { ::close(fd); }
};

void send_many(const Receiver& to, int count) {
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    const std::vector<char> payload(1000, 'x');
    for (int i = 0; i < count; ++i) {
        sendto(fd, payload.data(), payload.size(), 0,
               reinterpret_cast<const sockaddr*>(&to.address), sizeof to.address);
    }
    ::close(fd);
}

}  // namespace

TEST_CASE("kernel_drops() is the count of the socket just read", "[udp_socket]") {
    Receiver flooded, quiet;
    send_many(flooded, 200);  // far more than the smallest buffer holds
    DatagramBatch batch(8, 2048);
    while (batch.receive(flooded.fd) > 0) {
    }
    send_many(flooded, 1);  // the kernel stamps the drop count on datagrams queued after them
    send_many(quiet, 1);
    REQUIRE(batch.receive(flooded.fd) == 1);
    CHECK(batch.kernel_drops() > 0);
    REQUIRE(batch.receive(quiet.fd) == 1);
    CHECK(batch.kernel_drops() == 0);  // not the flooded socket's count again
}

namespace {

// `count` datagrams of 100 + 10 * i bytes (value i), sent as one segmentation
// offload run to `to` (each but the last padded to the last's size, 190 bytes).
void send_run(const sockaddr_in& to, size_t count) {
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    REQUIRE(connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0);
    std::vector<std::vector<uint8_t>> payloads;
    for (size_t i = 0; i < count; ++i) payloads.emplace_back(100 + 10 * i, uint8_t(i));
    const std::vector<std::span<const uint8_t>> datagrams(payloads.begin(), payloads.end());
    std::vector<uint8_t> sent(count, 0);
    DatagramBatchSender sender(fd, true);
    sender.send(datagrams, sent);
    REQUIRE(sender.segmented_datagrams() == count);
    ::close(fd);
}

void send_one(const sockaddr_in& to, size_t bytes) {
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    const std::vector<uint8_t> payload(bytes, 0xEE);
    sendto(fd, payload.data(), payload.size(), 0, reinterpret_cast<const sockaddr*>(&to),
           sizeof to);
    ::close(fd);
}

}  // namespace

TEST_CASE("a coalescing socket takes a run as one message, the batch cuts it into its datagrams",
          "[udp_socket]") {
    UdpSocket receiver = UdpSocket::unicast("127.0.0.1", 0, 1 << 20);
    const bool coalescing = GENERATE(true, false);
    CAPTURE(coalescing);
    if (coalescing) REQUIRE(receiver.enable_receive_coalescing());
    const sockaddr_in to = receiver.local_address();
    send_run(to, 10);
    send_one(to, 60);
    DatagramBatch batch(8, 1400, /*coalesced=*/true);
    size_t got = 0, coalesced = 0;
    std::vector<size_t> sizes;
    for (size_t n = batch.receive(receiver.fd()); n > 0; n = batch.receive(receiver.fd())) {
        coalesced += batch.coalesced();
        for (size_t i = 0; i < n; ++i, ++got) {
            const auto datagram = batch.datagram(i);
            sizes.push_back(datagram.size());
            CHECK_FALSE(batch.truncated(i));
            CHECK(batch.source(i).sin_addr.s_addr == htonl(INADDR_LOOPBACK));
            const uint8_t value = got < 10 ? uint8_t(got) : 0xEE;
            const size_t own = got < 10 ? 100 + 10 * got : 60;
            REQUIRE(datagram.size() >= own);
            for (size_t b = 0; b < datagram.size(); ++b) {
                REQUIRE(datagram[b] == (b < own ? value : 0));  // then the padding
            }
        }
    }
    CHECK(got == 11);
    // The run as sent: nine padded to 190 bytes, the last 190; then the lone 60.
    CHECK(sizes == std::vector<size_t>{190, 190, 190, 190, 190, 190, 190, 190, 190, 190, 60});
    CHECK(coalesced == (coalescing ? 10 : 0));  // without, the kernel cut the run itself
}

TEST_CASE("a coalesced batch still reports a datagram over max_datagram_bytes as truncated",
          "[udp_socket]") {
    UdpSocket receiver = UdpSocket::unicast("127.0.0.1", 0, 1 << 20);
    REQUIRE(receiver.enable_receive_coalescing());
    send_one(receiver.local_address(), 1200);
    send_one(receiver.local_address(), 1000);
    DatagramBatch batch(8, 1000, /*coalesced=*/true);
    REQUIRE(batch.receive(receiver.fd()) == 2);
    CHECK(batch.datagram(0).size() == 1200);
    CHECK(batch.truncated(0));  // the server drops it: larger than its max_datagram_bytes
    CHECK(batch.datagram(1).size() == 1000);
    CHECK_FALSE(batch.truncated(1));
}
