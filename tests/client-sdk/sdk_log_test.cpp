// Tests for client-sdk/src/sdk_log.cpp: the application's log handler gets
// the SDK's lines at or above the threshold; an option level overrides the
// threshold for its component; an empty handler gives the lines back to stderr.
#include "sdk_log.h"

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mdcast/log.h"

namespace {

using Lines = std::vector<std::pair<mdcast::LogLevel, std::string>>;

struct Capture {
    Capture() {
        mdcast::set_log_handler([this](mdcast::LogLevel level, std::string_view text) {
            lines.emplace_back(level, text);
        });
    }
    ~Capture() {
        mdcast::set_log_handler(nullptr);
        mdcast::set_log_level(mdcast::LogLevel::kWarn);
    }
    Lines lines;
};

}  // namespace

TEST_CASE("the handler gets SDK lines at or above the threshold", "[sdk_log]") {
    Capture capture;
    auto log = mdcast::sdk::logger("sdk.consumer", "");  // the process-wide level: warn
    log->info("not wanted");
    log->warn("server {} lost", "127.0.0.1:14002");
    log->error("handler threw");
    REQUIRE(capture.lines.size() == 2);
    CHECK(capture.lines[0] ==
          std::make_pair(mdcast::LogLevel::kWarn,
                         std::string("sdk.consumer: server 127.0.0.1:14002 lost")));
    CHECK(capture.lines[1].first == mdcast::LogLevel::kError);

    mdcast::set_log_level(mdcast::LogLevel::kDebug);
    log->debug("now wanted");
    log->trace("still not");
    REQUIRE(capture.lines.size() == 3);
    CHECK(capture.lines[2] ==
          std::make_pair(mdcast::LogLevel::kDebug, std::string("sdk.consumer: now wanted")));

    mdcast::set_log_level(mdcast::LogLevel::kOff);
    log->error("off means nothing");
    CHECK(capture.lines.size() == 3);
}

TEST_CASE("ConnectionOptions::log_level overrides the threshold for its component", "[sdk_log]") {
    Capture capture;
    auto publisher = mdcast::sdk::logger("sdk.publisher", "info");
    auto consumer = mdcast::sdk::logger("sdk.consumer", "");
    publisher->info("publisher info");
    consumer->info("consumer info");
    REQUIRE(capture.lines.size() == 1);
    CHECK(capture.lines[0].second == "sdk.publisher: publisher info");
}

TEST_CASE("a throwing handler does not reach the logging thread", "[sdk_log]") {
    mdcast::set_log_handler(
        [](mdcast::LogLevel, std::string_view) { throw std::runtime_error("x"); });
    CHECK_NOTHROW(mdcast::sdk::logger("sdk.consumer", "")->error("dropped"));
    Capture capture;  // replaces the throwing handler, restores stderr at the end
    mdcast::sdk::logger("sdk.consumer", "")->error("kept");
    CHECK(capture.lines.size() == 1);
}

TEST_CASE("log levels have names", "[sdk_log]") {
    CHECK(mdcast::to_string(mdcast::LogLevel::kTrace) == "trace");
    CHECK(mdcast::to_string(mdcast::LogLevel::kWarn) == "warn");
    CHECK(mdcast::to_string(mdcast::LogLevel::kOff) == "off");
}
