#include "distributor/retransmit_window.h"

#include <catch2/catch.hpp>
#include <vector>

using mdcast::distributor::RetransmitWindow;
using Verdict = RetransmitWindow::RepairVerdict;

namespace {
std::vector<uint8_t> bytes(size_t n, uint8_t fill) {
    return std::vector<uint8_t>(n, fill);
}
constexpr int64_t kMs = 1'000'000;
}  // namespace

TEST_CASE("stored datagrams are found by sequence", "[retransmit_window]") {
    RetransmitWindow window(1 << 20, 1000 * kMs);
    for (uint64_t s = 10; s < 20; ++s) window.store(s, bytes(100, static_cast<uint8_t>(s)), 0);
    CHECK(window.packets() == 10);
    CHECK(window.bytes() == 1000);
    REQUIRE(window.find(15) != nullptr);
    CHECK(window.find(15)->datagram[0] == 15);
    CHECK(window.find(9) == nullptr);
    CHECK(window.find(20) == nullptr);
    CHECK(window.trailing_edge(20) == 10);
}

TEST_CASE("the byte limit evicts the oldest and moves the trailing edge", "[retransmit_window]") {
    RetransmitWindow window(350, 1000 * kMs);
    for (uint64_t s = 1; s <= 5; ++s) window.store(s, bytes(100, 0), 0);
    CHECK(window.packets() == 3);
    CHECK(window.bytes() == 300);
    CHECK(window.trailing_edge(6) == 3);
    CHECK(window.find(2) == nullptr);
}

TEST_CASE("the age limit expires old datagrams", "[retransmit_window]") {
    RetransmitWindow window(1 << 20, 100 * kMs);
    window.store(1, bytes(10, 0), 0);
    window.store(2, bytes(10, 0), 50 * kMs);
    window.expire(120 * kMs);
    CHECK(window.trailing_edge(3) == 2);
    window.expire(200 * kMs);
    CHECK(window.packets() == 0);
    CHECK(window.trailing_edge(3) == 3);
}

TEST_CASE("sequences must be stored without holes", "[retransmit_window]") {
    RetransmitWindow window(1 << 20, 1000 * kMs);
    window.store(1, bytes(10, 0), 0);
    CHECK_THROWS_AS(window.store(3, bytes(10, 0), 0), std::logic_error);
}

TEST_CASE("a NAK storm from many servers costs one repair per linger", "[retransmit_window]") {
    RetransmitWindow window(1 << 20, 1000 * kMs);
    for (uint64_t s = 1; s <= 10; ++s) window.store(s, bytes(50, 0), 0);
    const int64_t linger = kMs / 2;
    int sends = 0;
    int64_t now = 5 * kMs;
    for (int server = 0; server < 8; ++server) {  // eight servers lost packet 4
        RetransmitWindow::Entry* entry = nullptr;
        if (window.repair_verdict(4, now, linger, entry) == Verdict::kSend) {
            RetransmitWindow::mark_repaired(*entry, now);
            ++sends;
        }
        now += 20'000;  // NAKs spread over 160 us
    }
    CHECK(sends == 1);
    RetransmitWindow::Entry* entry = nullptr;
    CHECK(window.repair_verdict(4, now + linger, linger, entry) ==
          Verdict::kSend);  // a retry after the linger
    CHECK(window.repair_verdict(5, now, linger, entry) ==
          Verdict::kSend);  // other packets unaffected
    CHECK(window.repair_verdict(42, now, linger, entry) == Verdict::kBeyondWindow);
}
