// LossySocket over real loopback sockets: test loss applied at the socket's
// edge, each direction on its own; inactive settings pass every datagram in order.
#include "common/net/lossy_socket.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace mdcast;

namespace {

struct Pair {
    LossySocket sender;
    LossySocket receiver;
    sockaddr_in to;

    Pair(const LossSettings& receive_loss, const LossSettings& send_loss)
        : sender(UdpSocket::unicast("127.0.0.1", 0, 0), LossSettings{}, send_loss),
          receiver(UdpSocket::unicast("127.0.0.1", 0, 0), receive_loss, LossSettings{}),
          to(receiver.socket().local_address()) {}

    void send(int count) {
        for (int i = 0; i < count; ++i) {
            const std::string payload = std::to_string(i);
            REQUIRE(sender.send_to(
                {reinterpret_cast<const uint8_t*>(payload.data()), payload.size()}, to));
        }
    }

    // The payloads handed over by one receive, in the order handed over.
    std::vector<std::string> receive() {
        DatagramBatch batch(16, 64);
        std::vector<std::string> got;
        receiver.receive(batch, [&](size_t i) {
            const auto d = batch.datagram(i);
            got.emplace_back(d.begin(), d.end());
        });
        return got;
    }
};

}  // namespace

TEST_CASE("inactive loss passes every datagram once and in order", "[lossy_socket]") {
    Pair pair(LossSettings{}, LossSettings{});
    pair.send(3);
    CHECK(pair.receive() == std::vector<std::string>{"0", "1", "2"});
    CHECK(pair.receiver.injected_drops() == 0);
}

TEST_CASE("send loss drops on the way and reports the datagram sent", "[lossy_socket]") {
    LossSettings all;
    all.rate = 1.0;
    Pair pair(LossSettings{}, all);
    pair.send(4);  // each send_to says true
    CHECK(pair.receive().empty());
    CHECK(pair.sender.injected_drops() == 4);
    CHECK(pair.sender.send_loss_active());
}

TEST_CASE("receive loss drops, duplicates and reorders before the reader", "[lossy_socket]") {
    SECTION("dropped datagrams never reach the reader") {
        LossSettings burst;
        burst.burst_every = 2;  // the second of every two
        burst.burst_length = 1;
        Pair pair(burst, LossSettings{});
        pair.send(4);
        CHECK(pair.receive() == std::vector<std::string>{"0", "2"});
        CHECK(pair.receiver.injected_drops() == 2);
    }
    SECTION("a duplicate is handed over twice") {
        LossSettings twice;
        twice.duplicate_rate = 1.0;
        Pair pair(twice, LossSettings{});
        pair.send(2);
        CHECK(pair.receive() == std::vector<std::string>{"0", "0", "1", "1"});
    }
    SECTION("a reordered datagram comes after the one behind it") {
        LossSettings swap;
        swap.reorder_rate = 1.0;
        Pair pair(swap, LossSettings{});
        pair.send(4);
        CHECK(pair.receive() == std::vector<std::string>{"1", "0", "3", "2"});
    }
}
