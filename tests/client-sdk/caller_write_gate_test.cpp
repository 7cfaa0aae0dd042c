// Tests for client-sdk/src/caller_write_gate.h: when a plain update is left to
// the I/O thread to coalesce with the next ones, and when the publishing
// thread writes it at once. Times are given, not read: nothing here is timed.
#include "caller_write_gate.h"

#include <catch2/catch.hpp>

namespace {

using mdcast::sdk::CallerWriteGate;

}  // namespace

TEST_CASE("before any write the publishing thread writes at once", "[caller_write_gate]") {
    const CallerWriteGate gate;
    CHECK_FALSE(gate.coalescing(0));
    CHECK_FALSE(gate.coalescing(1'000'000));
}

TEST_CASE("an update sooner after a write than the write took coalesces", "[caller_write_gate]") {
    CallerWriteGate gate;
    gate.wrote(1'000'000, 1'010'000);  // 10 µs
    CHECK(gate.coalescing(1'010'000));
    CHECK(gate.coalescing(1'019'999));
    CHECK_FALSE(gate.coalescing(1'020'000));
    CHECK_FALSE(gate.coalescing(2'000'000));
}

TEST_CASE("the last write decides, however long the one before took", "[caller_write_gate]") {
    CallerWriteGate gate;
    gate.wrote(0, 50'000);
    gate.wrote(100'000, 101'000);  // 1 µs
    CHECK(gate.coalescing(101'500));
    CHECK_FALSE(gate.coalescing(102'000));
}

TEST_CASE("a write of no measurable time, or a clock that stepped back, never holds back",
          "[caller_write_gate]") {
    CallerWriteGate gate;
    gate.wrote(5'000, 5'000);
    CHECK_FALSE(gate.coalescing(5'000));
    gate.wrote(9'000, 8'000);
    CHECK_FALSE(gate.coalescing(8'000));
}
