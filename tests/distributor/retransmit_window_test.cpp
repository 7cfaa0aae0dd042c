#include "distributor/retransmit_window.h"

#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "proto/limits.h"

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

TEST_CASE("an old datagram is evicted when a new one is stored", "[retransmit_window]") {
    // No burst of evictions left for the next heartbeat's expire().
    RetransmitWindow window(1 << 20, 100 * kMs);
    window.store(1, bytes(10, 0), 0);
    window.store(2, bytes(10, 0), 50 * kMs);
    window.store(3, bytes(10, 0), 120 * kMs);
    CHECK(window.trailing_edge(4) == 2);
    CHECK(window.packets() == 2);
    CHECK(window.bytes() == 20);
}

TEST_CASE("datagrams of every size keep their bytes while the ring wraps", "[retransmit_window]") {
    // A small window so the ring wraps hundreds of times; every datagram held
    // must read back exactly as stored, and the oldest go first.
    const size_t max_bytes = 3000;
    RetransmitWindow window(max_bytes, 1000 * kMs);
    std::mt19937 random(13);
    std::vector<std::vector<uint8_t>> stored(1);  // by sequence; 0 unused
    for (uint64_t sequence = 1; sequence <= 20000; ++sequence) {
        std::vector<uint8_t> datagram(1 + random() % 1400);
        for (auto& byte : datagram) byte = static_cast<uint8_t>(random());
        window.store(sequence, datagram, 0);
        stored.push_back(std::move(datagram));
        REQUIRE(window.bytes() <= max_bytes);
        const uint64_t edge = window.trailing_edge(sequence + 1);
        REQUIRE(edge <= sequence);
        size_t held = 0;
        for (uint64_t s = edge; s <= sequence; ++s) {
            const RetransmitWindow::Entry* entry = window.find(s);
            REQUIRE(entry != nullptr);
            REQUIRE(entry->sequence == s);
            REQUIRE(std::equal(entry->datagram.begin(), entry->datagram.end(), stored[s].begin(),
                               stored[s].end()));
            held += entry->datagram.size();
        }
        REQUIRE(held == window.bytes());
        REQUIRE(window.packets() == sequence - edge + 1);
        // Only what the byte limit pushed out is gone: the next older one
        // would not fit beside the rest.
        if (edge > 1) REQUIRE(held + stored[edge - 1].size() > max_bytes);
    }
}

TEST_CASE("more datagrams than the first entry ring holds", "[retransmit_window]") {
    RetransmitWindow window(1 << 20, 1000 * kMs);
    for (uint64_t s = 1; s <= 5000; ++s) window.store(s, bytes(20, static_cast<uint8_t>(s)), 0);
    CHECK(window.packets() == 5000);
    for (uint64_t s = 1; s <= 5000; ++s) {
        REQUIRE(window.find(s) != nullptr);
        REQUIRE(window.find(s)->datagram[0] == static_cast<uint8_t>(s));
    }
}

TEST_CASE("a datagram out of the size range is refused", "[retransmit_window]") {
    RetransmitWindow window(1 << 20, 1000 * kMs);
    CHECK_THROWS_AS(window.store(1, bytes(0, 0), 0), std::logic_error);
    CHECK_THROWS_AS(window.store(1, bytes(mdcast::proto::kMaxDatagramBytes + 1, 0), 0),
                    std::logic_error);
    CHECK(window.packets() == 0);
}

TEST_CASE("a window the kernel cannot reserve is refused with the key's name",
          "[retransmit_window]") {
    // 2^60 bytes: no machine reserves that; the distributor exits at start-up
    // saying which key, not with a bare bad_alloc. (AddressSanitizer's
    // allocator aborts on such a size instead of returning null.)
#if defined(__SANITIZE_ADDRESS__)
    return;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return;
#endif
#endif
    try {
        RetransmitWindow window(size_t{1} << 60, 1000 * kMs);
        FAIL("a 2^60-byte window was reserved");
    } catch (const std::runtime_error& error) {
        CHECK(std::string(error.what()).find("backbone.retransmit_window_bytes") !=
              std::string::npos);
    }
}

TEST_CASE("evicting for room what servers may still ask for is counted", "[retransmit_window]") {
    constexpr int64_t kMs = 1'000'000;
    RetransmitWindow window(300, 10'000 * kMs, 2'000 * kMs);  // repair horizon 2 s
    window.store(1, bytes(100, 1), 0);
    window.store(2, bytes(100, 2), 0);
    window.store(3, bytes(100, 3), 1'000 * kMs);
    CHECK(window.held_ns(1'500 * kMs) == 1'500 * kMs);
    window.store(4, bytes(100, 4), 1'500 * kMs);  // evicts 1, sent 1.5 s ago: too young
    CHECK(window.short_evictions() == 1);
    window.store(5, bytes(100, 5), 2'500 * kMs);  // evicts 2, sent 2.5 s ago: past the horizon
    CHECK(window.short_evictions() == 1);
    window.expire(20'000 * kMs);  // expiring by age is never short
    CHECK(window.short_evictions() == 1);
    CHECK(window.held_ns(20'000 * kMs) == 0);
}

TEST_CASE("a window kept small by its age limit touches little of its ring",
          "[retransmit_window]") {
    // Found by the 30-minute soak: a 64 MiB ring holding 2 MB (10 s at the
    // soak's rate) walked its whole length once, and the distributor's RSS grew
    // from 18 to 80 MiB.
    constexpr int64_t kMs = 1'000'000;
    RetransmitWindow window(64 << 20, 1'000 * kMs);
    uint64_t sequence = 1;
    for (int64_t now = 0; now < 600'000 * kMs; now += kMs) {  // 10 minutes, 1 datagram per ms
        window.store(sequence, bytes(200, static_cast<uint8_t>(sequence)), now);
        ++sequence;
    }
    CHECK(window.bytes() <= 1001 * 200);         // the last second
    CHECK(window.footprint() < 4 * 1001 * 200);  // not the 64 MiB
    REQUIRE(window.find(sequence - 1) != nullptr);
    CHECK(window.find(sequence - 1)->datagram[0] == static_cast<uint8_t>(sequence - 1));
    CHECK(window.find(sequence - 1000)->datagram[0] == static_cast<uint8_t>(sequence - 1000));
}

TEST_CASE("a rate that more than doubles after the ring's start was reused keeps the newest",
          "[retransmit_window]") {
    constexpr int64_t kMs = 1'000'000;
    RetransmitWindow window(1 << 20, 1'000 * kMs);
    uint64_t sequence = 1;
    int64_t now = 0;
    for (; now < 5'000 * kMs; now += kMs) window.store(sequence++, bytes(100, 1), now);
    for (; now < 6'000 * kMs; now += kMs) {  // ten times the rate for a second
        for (int i = 0; i < 10; ++i) window.store(sequence++, bytes(100, 2), now);
    }
    // Every datagram of the last second is held, in order, whatever was evicted.
    for (uint64_t s = sequence - 10'000; s < sequence; ++s) REQUIRE(window.find(s) != nullptr);
    CHECK(window.trailing_edge(sequence) <= sequence - 10'000);
}
