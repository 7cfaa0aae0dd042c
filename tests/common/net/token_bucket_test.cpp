#include "common/net/token_bucket.h"

#include <catch2/catch.hpp>

using mdcast::TokenBucket;

TEST_CASE("a bucket allows its burst, then its rate", "[token_bucket]") {
    TokenBucket bucket(1000, 100);  // 1000 per second, burst 100
    const int64_t t0 = 1'000'000'000;
    CHECK(bucket.try_take(100, t0));
    CHECK_FALSE(bucket.try_take(1, t0));
    CHECK_FALSE(bucket.try_take(11, t0 + 10'000'000));  // 10 ms later: 10 tokens
    CHECK(bucket.try_take(10, t0 + 10'000'000));
    CHECK(bucket.try_take(100, t0 + 10'000'000'000));  // refill is capped at the burst
    CHECK_FALSE(bucket.try_take(1, t0 + 10'000'000'000));
}

TEST_CASE("rate 0 is unlimited", "[token_bucket]") {
    TokenBucket bucket(0, 0);
    CHECK(bucket.unlimited());
    CHECK(bucket.try_take(1'000'000'000, 0));
}
