// Logging: libprotobuf's own error lines go through our "protobuf" logger,
// rate-limited, instead of one raw stderr line per bad message.
#include "common/logging.h"

#include <spdlog/sinks/ostream_sink.h>

#include <catch2/catch.hpp>
#include <sstream>
#include <string>

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
