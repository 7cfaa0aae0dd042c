// DatagramBatch over real loopback sockets: the kernel drop count it reports
// belongs to the socket it just read, never to another one it served before.
#include "common/net/udp_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <vector>

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
