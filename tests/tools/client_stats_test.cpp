// Tests for tools/client/client_stats.h: start-up vs steady-state latency,
// interval samples, image timing and the rendered summary and CSV.
#include "client_stats.h"

#include <catch2/catch.hpp>
#include <string>

namespace {

using mdcast::tools::ClientStats;
using mdcast::tools::latency_json;
using mdcast::tools::ProcessUsage;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kStart = 5'000 * 1'000 * kMs;

// The number after "key": in a JSON text (first occurrence).
double json_number(const std::string& text, const std::string& key) {
    const auto at = text.find("\"" + key + "\":");
    REQUIRE(at != std::string::npos);
    return std::stod(text.substr(at + key.size() + 3));
}

}  // namespace

TEST_CASE("latency before the warm-up ends is start-up, after it steady state", "[client_stats]") {
    ClientStats stats(kStart);
    stats.record_latency(1'000'000);
    stats.record_latency(3'000'000);
    CHECK_FALSE(stats.steady());
    stats.begin_steady(kStart + 1000 * kMs);
    stats.begin_steady(kStart + 2000 * kMs);  // only the first call counts
    for (int i = 1; i <= 100; ++i) stats.record_latency(i * 1000);
    CHECK(stats.startup_latency().count() == 2);
    CHECK(stats.startup_latency().mean_ns() == Approx(2'000'000));
    CHECK(stats.steady_latency().count() == 100);
    CHECK(stats.steady_latency().mean_ns() == Approx(50'500));
    CHECK(stats.steady_latency().min_ns() == 1000);
    CHECK(stats.steady_latency().max_ns() == 100'000);
}

TEST_CASE("interval samples cover only their interval", "[client_stats]") {
    ClientStats stats(kStart);
    stats.begin_steady(kStart);
    stats.totals.updates = 500;
    stats.record_latency(10'000);
    stats.record_latency(30'000);
    const auto first = stats.take_sample(kStart + 500 * kMs, 12.5, 3.0);
    CHECK(first.elapsed_s == Approx(0.5));
    CHECK(first.updates_per_s == Approx(1000));
    CHECK(first.latency.count == 2);
    CHECK(first.latency.mean_ns() == Approx(20'000));
    CHECK(first.latency.max_ns == 30'000);
    CHECK(first.cpu_percent == 12.5);
    stats.totals.updates = 2500;
    stats.record_latency(-5);  // clock skew counts as 0 in the interval
    const auto second = stats.take_sample(kStart + 1500 * kMs, 0, 0);
    CHECK(second.updates_per_s == Approx(2000));
    CHECK(second.latency.count == 1);
    CHECK(second.latency.max_ns == 0);
    CHECK(stats.steady_latency().negative_count() == 1);
}

TEST_CASE("image time and rate run from the first to the last image", "[client_stats]") {
    ClientStats stats(kStart);
    CHECK(stats.image_time_s() == 0);
    for (int i = 0; i <= 1000; ++i) stats.on_image(kStart + 10 * kMs + i * 2000);  // 2 us apart
    CHECK(stats.totals.refreshes == 1001);
    CHECK(stats.image_time_s() == Approx(0.002));
    stats.begin_steady(kStart + 1000 * kMs);
    stats.totals.updates = 4000;
    ProcessUsage usage;
    usage.cpu_s = 0.5;
    const std::string summary = stats.summary_json(kStart + 2000 * kMs, 3, 1.0, usage);
    CHECK(json_number(summary, "images_per_s") == Approx(1001 / 0.002));
    CHECK(json_number(summary, "elapsed_s") == Approx(2.0));
    CHECK(json_number(summary, "steady_s") == Approx(1.0));
    CHECK(json_number(summary, "steady_updates") == 4000);
    CHECK(json_number(summary, "cpu_percent") == Approx(25.0));
    CHECK(json_number(summary, "connections") == 3);
    CHECK(summary.find("\"startup_latency_us\":{\"count\":0") != std::string::npos);
}

TEST_CASE("the latency JSON has every statistic and the 10 us histogram", "[client_stats]") {
    mdcast::LatencyHistogram h;
    for (int64_t v : {12'000, 15'000, 18'000, 45'000}) h.record(v);
    const std::string text = latency_json(h, true);
    CHECK(json_number(text, "count") == 4);
    CHECK(json_number(text, "mean") == Approx(22.5));
    CHECK(json_number(text, "min") == Approx(12.0));
    CHECK(json_number(text, "max") == Approx(45.0));
    CHECK(json_number(text, "p99_99") == Approx(45.0));
    CHECK(text.find("\"histogram_10us\":[[10,3],[40,1]]") != std::string::npos);
    CHECK(latency_json(h, false).find("histogram") == std::string::npos);
}

TEST_CASE("CSV rows match the header", "[client_stats]") {
    ClientStats stats(kStart);
    stats.totals.updates = 10;
    stats.totals.gaps = 2;
    const auto sample = stats.take_sample(kStart + 1000 * kMs, 50, 4.5);
    const std::string header = mdcast::tools::stats_csv_header();
    const std::string row = mdcast::tools::stats_csv_row(sample, stats.totals);
    const auto commas = [](const std::string& s) { return std::count(s.begin(), s.end(), ','); };
    CHECK(commas(header) == commas(row));
    CHECK(row.rfind("1.000,10,10.0,0,0,2,", 0) == 0);
    CHECK(row.back() == '\n');
}

TEST_CASE("merge adds another connection's counts, latencies and image times", "[client_stats]") {
    ClientStats a(kStart), b(kStart + 10 * kMs);
    a.on_image(kStart + 100 * kMs);
    b.on_image(kStart + 50 * kMs);
    b.on_image(kStart + 300 * kMs);
    a.totals.updates = 10;
    a.totals.gaps = 1;
    b.totals.updates = 5;
    b.totals.duplicates = 2;
    a.record_latency(1'000'000);
    a.begin_steady(kStart + 1000 * kMs);
    b.begin_steady(kStart + 900 * kMs);
    a.record_latency(2'000);
    b.record_latency(4'000);
    a.merge(b);
    CHECK(a.totals.updates == 15);
    CHECK(a.totals.gaps == 1);
    CHECK(a.totals.duplicates == 2);
    CHECK(a.totals.refreshes == 3);
    CHECK(a.startup_latency().count() == 1);
    CHECK(a.steady_latency().count() == 2);
    CHECK(a.steady_latency().mean_ns() == Approx(3'000));
    CHECK(a.image_time_s() == Approx(0.25));
    const std::string text = a.summary_json(kStart + 1900 * kMs, 2, 1.0, ProcessUsage{});
    CHECK(json_number(text, "steady_s") == Approx(1.0));  // from the earlier steady start
}

TEST_CASE("count_sequence counts alike on an ItemState and on a bare last sequence",
          "[client_stats]") {
    using mdcast::tools::ClientTotals;
    mdcast::tools::ItemState item{"SVC", "A", 5};
    uint64_t last_seq = 5;
    ClientTotals by_item, by_seq;
    // in order, a gap of two, a duplicate, an old one, in order; then with gaps expected
    for (uint64_t seq : {6, 9, 9, 3, 10}) {
        mdcast::tools::count_sequence(by_item, item, seq, false);
        mdcast::tools::count_sequence(by_seq, last_seq, seq, false);
    }
    mdcast::tools::count_sequence(by_item, item, 20, true);
    mdcast::tools::count_sequence(by_seq, last_seq, 20, true);
    CHECK(by_seq.gaps == 1);
    CHECK(by_seq.missing == 2);
    CHECK(by_seq.duplicates == 2);
    CHECK(last_seq == 20);
    CHECK(item.last_seq == last_seq);
    CHECK(by_item.gaps == by_seq.gaps);
    CHECK(by_item.missing == by_seq.missing);
    CHECK(by_item.duplicates == by_seq.duplicates);
}
