#include "common/net/output_pool.h"

#include <catch2/catch.hpp>

using mdcast::OutputPool;

TEST_CASE("a connection may always queue its guaranteed bytes", "[output_pool]") {
    OutputPool pool(0, 1000, 5000);  // an empty pool: only guarantees
    CHECK(pool.admit(0, 1000));
    CHECK(pool.admit(400, 600));
    CHECK_FALSE(pool.admit(400, 601));  // would need the (empty) pool
}

TEST_CASE("beyond the guarantee a connection borrows from the shared pool", "[output_pool]") {
    OutputPool pool(3000, 1000, 5000);
    CHECK(pool.admit(0, 3000));  // borrows 2000
    pool.on_change(0, 3000);
    CHECK(pool.borrowed() == 2000);
    CHECK(pool.admit(0, 2000));        // a second connection may borrow the last 1000
    CHECK_FALSE(pool.admit(0, 2001));  // but not more: the pool is exhausted
    pool.on_change(0, 2000);
    CHECK(pool.borrowed() == 3000);
    CHECK(pool.admit(0, 1000));  // guarantees still hold with the pool empty
    pool.on_change(3000, 500);   // the first drained below its guarantee
    CHECK(pool.borrowed() == 1000);
    CHECK(pool.peak_borrowed() == 3000);
}

TEST_CASE("no connection passes the maximum, whatever the pool holds", "[output_pool]") {
    OutputPool pool(1 << 30, 1000, 5000);
    CHECK(pool.admit(4000, 1000));
    CHECK_FALSE(pool.admit(4000, 1001));
}

TEST_CASE("a maximum below the guarantee is raised to it", "[output_pool]") {
    OutputPool pool(0, 2000, 1000);
    CHECK(pool.max() == 2000);
    CHECK(pool.admit(0, 2000));
}
