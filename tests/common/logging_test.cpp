// Logging: libprotobuf's own error lines go through our "protobuf" logger,
// rate-limited, instead of one raw stderr line per bad message; peer text is
// escaped before it goes into a log field.
#include "common/logging.h"

#include <spdlog/sinks/ostream_sink.h>

#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "wire/common.pb.h"

using namespace mdcast;

TEST_CASE("protobuf's error lines go to the protobuf logger, at most one a second", "[logging]") {
    log::route_protobuf_logs();
    std::ostringstream out;
    auto logger = log::get("protobuf");
    logger->sinks().push_back(std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
    logger->set_level(spdlog::level::info);
    mdcast::wire::v1::ItemStatus status;
    status.set_item_name("ITEM");
    std::string bytes = status.SerializeAsString();
    bytes.back() = '\xff';  // the name is no longer UTF-8: protobuf refuses and logs
    for (int i = 0; i < 1000; ++i) CHECK_FALSE(status.ParseFromString(bytes));
    const std::string text = out.str();
    size_t lines = 0;
    for (char c : text) lines += c == '\n';
    CHECK(text.find("UTF-8") != std::string::npos);
    CHECK(lines >= 1);
    CHECK(lines <= 2);  // 1,000 bad messages within a second: one line (two at a second's edge)
    logger->sinks().pop_back();
}

TEST_CASE("a rate limiter lets one line an interval through and counts the rest", "[logging]") {
    log::RateLimiter limiter(std::chrono::milliseconds(50));
    uint64_t suppressed = 99;
    CHECK(limiter.allow(suppressed));
    CHECK(suppressed == 0);
    for (int i = 0; i < 10; ++i) CHECK_FALSE(limiter.allow(suppressed));
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    CHECK(limiter.allow(suppressed));
    CHECK(suppressed == 10);  // the next line says how many were skipped
}

TEST_CASE("close warnings are limited per close reason", "[logging]") {
    uint64_t suppressed = 0;
    // Reasons far apart in the enum: one reason's flood does not silence another.
    auto& first = log::close_warnings(1);
    auto& second = log::close_warnings(2);
    CHECK(&first != &second);
    CHECK(&first == &log::close_warnings(1));  // one limiter per reason, shared by every connection
    first.allow(suppressed);
    CHECK_FALSE(first.allow(suppressed));
    CHECK(second.allow(suppressed));
}

TEST_CASE("peer text is escaped for a log field: no line breaks, no control bytes", "[logging]") {
    using namespace std::string_literals;
    CHECK(log::escaped("ITEM000001") == "ITEM000001");
    CHECK(log::escaped("eve\n2026-01-01 info forged") == "eve\\n2026-01-01 info forged");
    CHECK(log::escaped("a\rb\tc\\d") == "a\\rb\\tc\\\\d");
    CHECK(log::escaped("\x1b[31mred\x7f"s + '\0') == "\\x1b[31mred\\x7f\\x00");
    CHECK(log::escaped("Zürich €") == "Zürich €");  // UTF-8 is kept as it is
    CHECK(log::escaped("") == "");
}
