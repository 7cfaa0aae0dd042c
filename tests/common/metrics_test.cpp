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

TEST_CASE("labelled series share one HELP and TYPE, histograms are cumulative", "[metrics]") {
    MetricsRegistry metrics("mdcast_test_");
    metrics.counter("closes_total", "Closes", {{"reason", "slow_consumer"}}, [] { return 3.0; });
    metrics.counter("closes_total", "Closes", {{"reason", "a\"b"}}, [] { return 1.0; });
    metrics.histogram("latency_seconds", "Latency", [] {
        return mdcast::HistogramSnapshot{{0.001, 0.01}, {2, 5}, 7, 0.25, 0.002, 0.5};
    });
    metrics.gauge_unprefixed("mdcast_build_info", "Build", {{"version", "1.0"}},
                             [] { return 1.0; });
    CHECK(metrics.prometheus() ==
          "# HELP mdcast_test_closes_total Closes\n"
          "# TYPE mdcast_test_closes_total counter\n"
          "mdcast_test_closes_total{reason=\"slow_consumer\"} 3\n"
          "mdcast_test_closes_total{reason=\"a\\\"b\"} 1\n"
          "# HELP mdcast_test_latency_seconds Latency\n"
          "# TYPE mdcast_test_latency_seconds histogram\n"
          "mdcast_test_latency_seconds_bucket{le=\"0.001\"} 2\n"
          "mdcast_test_latency_seconds_bucket{le=\"0.01\"} 5\n"
          "mdcast_test_latency_seconds_bucket{le=\"+Inf\"} 7\n"
          "mdcast_test_latency_seconds_sum 0.25\n"
          "mdcast_test_latency_seconds_count 7\n"
          "# HELP mdcast_build_info Build\n"
          "# TYPE mdcast_build_info gauge\n"
          "mdcast_build_info{version=\"1.0\"} 1\n");
    CHECK(metrics.log_line() ==
          "closes_slow_consumer=3 closes_a\"b=1 latency_p50_seconds=0.002 "
          "latency_p99_seconds=0.5 mdcast_build_info_1.0=1");
    CHECK(
        metrics.json().starts_with("{\"closes_total:slow_consumer\":3,\"closes_total:a\\\"b\":1,"
                                   "\"latency_p50_seconds\":0.002,"));
    CHECK_THROWS_AS(metrics.counter("x", "", {{"Bad", "v"}}, [] { return 0.0; }),
                    std::invalid_argument);
}

TEST_CASE("a family's series are read when rendered, however many there are then", "[metrics]") {
    MetricsRegistry metrics("mdcast_test_");
    MetricsRegistry::Series series;
    metrics.gauge_family("active_source", "Active source per service", [&] { return series; });
    CHECK(metrics.prometheus() ==
          "# HELP mdcast_test_active_source Active source per service\n"
          "# TYPE mdcast_test_active_source gauge\n");
    CHECK(metrics.log_line().empty());
    series = {{{{"service", "MDCAST"}}, 1}, {{{"service", "FX\"Q"}}, 2}};
    CHECK(metrics.prometheus() ==
          "# HELP mdcast_test_active_source Active source per service\n"
          "# TYPE mdcast_test_active_source gauge\n"
          "mdcast_test_active_source{service=\"MDCAST\"} 1\n"
          "mdcast_test_active_source{service=\"FX\\\"Q\"} 2\n");
    CHECK(metrics.log_line() == "active_source_MDCAST=1 active_source_FX\"Q=2");
    CHECK(metrics.json() == "{\"active_source:MDCAST\":1,\"active_source:FX\\\"Q\":2}");
}
