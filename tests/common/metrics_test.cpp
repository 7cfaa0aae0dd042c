#include "common/metrics.h"

#include <catch2/catch.hpp>

using mdcast::MetricsRegistry;

TEST_CASE("the registry renders Prometheus text, a log line and JSON from one declaration",
          "[metrics]") {
    MetricsRegistry metrics("mdcast_test_");
    uint64_t updates = 41;
    double depth = 2.5;
    metrics.counter("updates_total", "Updates seen", [&] { return static_cast<double>(updates); });
    metrics.gauge("queue_depth", "Queue depth", [&] { return depth; });
    ++updates;  // read when rendered, not when declared
    const std::string text = metrics.prometheus();
    CHECK(text ==
          "# HELP mdcast_test_updates_total Updates seen\n"
          "# TYPE mdcast_test_updates_total counter\n"
          "mdcast_test_updates_total 42\n"
          "# HELP mdcast_test_queue_depth Queue depth\n"
          "# TYPE mdcast_test_queue_depth gauge\n"
          "mdcast_test_queue_depth 2.5\n");
    CHECK(metrics.log_line() == "updates=42 queue_depth=2.5");
    CHECK(metrics.json() == "{\"updates_total\":42,\"queue_depth\":2.5}");
}

TEST_CASE("metric names are refused unless lower-case words", "[metrics]") {
    MetricsRegistry metrics("x_");
    CHECK_THROWS_AS(metrics.counter("Bad-Name", "", [] { return 0.0; }), std::invalid_argument);
    CHECK_THROWS_AS(metrics.gauge("", "", [] { return 0.0; }), std::invalid_argument);
}
