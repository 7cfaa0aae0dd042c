#include "common/auth/peer_limiter.h"

#include <catch2/catch.hpp>

using mdcast::auth::PeerLimiter;

namespace {
constexpr int64_t kMs = 1'000'000;
}

TEST_CASE("a peer is limited after `burst` failures and earns them back", "[peer_limiter]") {
    PeerLimiter limiter(3, 1000, 100);
    int64_t now = 1000 * kMs;
    for (int i = 0; i < 3; ++i) {
        CHECK(limiter.allowed("10.0.0.1", now));
        limiter.on_failure("10.0.0.1", now);
    }
    CHECK_FALSE(limiter.allowed("10.0.0.1", now));
    CHECK(limiter.allowed("10.0.0.2", now));  // other addresses are not affected
    CHECK_FALSE(limiter.allowed("10.0.0.1", now + 999 * kMs));
    CHECK(limiter.allowed("10.0.0.1", now + 1000 * kMs));  // one failure forgiven
    limiter.on_failure("10.0.0.1", now + 1000 * kMs);
    CHECK_FALSE(limiter.allowed("10.0.0.1", now + 1500 * kMs));
    CHECK(limiter.allowed("10.0.0.1", now + 100000 * kMs));  // never more than the burst
    for (int i = 0; i < 3; ++i) limiter.on_failure("10.0.0.1", now + 100000 * kMs);
    CHECK_FALSE(limiter.allowed("10.0.0.1", now + 100000 * kMs));
}

TEST_CASE("the table is bounded: the least recently seen peer is forgotten", "[peer_limiter]") {
    PeerLimiter limiter(1, 60000, 2);
    limiter.on_failure("a", 1);
    limiter.on_failure("b", 2);
    CHECK_FALSE(limiter.allowed("a", 3));  // touches a: b is now the oldest
    limiter.on_failure("c", 4);
    CHECK(limiter.tracked() == 2);
    CHECK(limiter.evictions() == 1);
    CHECK(limiter.allowed("b", 5));  // forgotten
    CHECK_FALSE(limiter.allowed("a", 5));
    CHECK_FALSE(limiter.allowed("c", 5));
}

TEST_CASE("peer strings are reduced to their address", "[peer_limiter]") {
    CHECK(PeerLimiter::address_of("10.1.2.3:45678") == "10.1.2.3");
    CHECK(PeerLimiter::address_of("[::1]:45678") == "::1");
    CHECK(PeerLimiter::address_of("::1") == "::1");
    CHECK(PeerLimiter::address_of("host") == "host");
}
