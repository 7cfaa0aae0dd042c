// WsStreams: the client's stream ids of a WebSocket session, pending until the
// server names the item, bound to it after, closed by id; and the restamping
// of a frame encoded with the item id.
#include "server/websocket/ws_streams.h"

#include <catch2/catch.hpp>
#include <string>

#include "proto/websocket/ws_frames.h"

using mdcast::server::restamp_stream_id;
using mdcast::server::WsStreams;
using Opened = WsStreams::Opened;

namespace {

std::vector<int64_t> ids(std::span<const int64_t> streams) {
    return {streams.begin(), streams.end()};
}

std::string text_frame(std::string_view payload) {
    std::string frame;
    mdcast::proto::append_ws_frame(frame, mdcast::proto::WsOpcode::kText, payload);
    return frame;
}

std::span<const uint8_t> bytes(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

TEST_CASE("streams wait for the item's name, then follow its id", "[ws_streams]") {
    WsStreams streams(10);
    CHECK(streams.open(2, "S", "A", true).opened == Opened::kNew);
    CHECK(streams.open(3, "S", "A", true).opened == Opened::kNew);
    CHECK(streams.pending() == 2);
    CHECK(streams.streams_of(77).empty());
    streams.bind("S", "A", 77);
    CHECK(streams.pending() == 0);
    CHECK(ids(streams.streams_of(77)) == std::vector<int64_t>{2, 3});
    // The item re-created upstream under a new id: the streams follow.
    streams.bind("S", "A", 90);
    CHECK(streams.streams_of(77).empty());
    CHECK(ids(streams.streams_of(90)) == std::vector<int64_t>{2, 3});
    // Only the last streaming stream's close unsubscribes.
    CHECK(streams.close(2)->unsubscribe == 0);
    CHECK(streams.close(3)->unsubscribe == 90);
    CHECK_FALSE(streams.close(3));
    CHECK(streams.size() == 0);
}

TEST_CASE("a reused id replaces its stream, the same request again is a reissue", "[ws_streams]") {
    WsStreams streams(10);
    streams.open(5, "S", "A", true);
    streams.bind("S", "A", 11);
    CHECK(streams.open(5, "S", "A", true).opened == Opened::kReissue);
    const auto replaced = streams.open(5, "S", "B", true);
    CHECK(replaced.opened == Opened::kReplaced);
    CHECK(replaced.unsubscribe == 11);
    CHECK(streams.streams_of(11).empty());
    CHECK(streams.pending() == 1);
}

TEST_CASE("snapshots, refusals and closed items free their ids", "[ws_streams]") {
    WsStreams streams(10);
    streams.open(4, "S", "A", false);
    streams.open(6, "S", "A", true);
    streams.bind("S", "A", 21);
    CHECK(streams.take_snapshots(21) == std::vector<int64_t>{4});
    CHECK(ids(streams.streams_of(21)) == std::vector<int64_t>{6});
    streams.open(8, "S", "NOSUCH", true);
    streams.open(9, "S", "NOSUCH", true);
    CHECK(streams.take_pending("S", "NOSUCH") == std::vector<int64_t>{8, 9});
    CHECK(streams.pending() == 0);
    streams.forget_item(21);
    CHECK(streams.size() == 0);
    CHECK(streams.open(6, "S", "B", true).opened == Opened::kNew);
}

TEST_CASE("streams are bounded", "[ws_streams]") {
    WsStreams streams(2);
    streams.open(1, "S", "A", true);
    streams.open(2, "S", "B", true);
    CHECK(streams.open(3, "S", "C", true).opened == Opened::kLimitReached);
    CHECK(streams.size() == 2);
    streams.close(1);
    CHECK(streams.open(3, "S", "C", true).opened == Opened::kNew);
}

TEST_CASE("restamping puts the stream id in the frame, re-framed", "[ws_streams]") {
    std::string out;
    REQUIRE(
        restamp_stream_id(bytes(text_frame(R"([{"ID":1099511627780,"Type":"Update"}])")), 7, out));
    CHECK(out == text_frame(R"([{"ID":7,"Type":"Update"}])"));
    // Across the 126-byte boundary of the length field, both ways.
    const std::string tail(120, 'x');
    const std::string long_payload = R"([{"ID":1,")" + tail + "\"}]";
    out.clear();
    REQUIRE(restamp_stream_id(bytes(text_frame(long_payload)), 123456789, out));
    CHECK(out == text_frame(R"([{"ID":123456789,")" + tail + "\"}]"));
    const std::string huge(70000, 'y');
    out.clear();
    REQUIRE(restamp_stream_id(bytes(text_frame(R"([{"ID":12,")" + huge + "\"}]")), 3, out));
    CHECK(out == text_frame(R"([{"ID":3,")" + huge + "\"}]"));
    // Not of the shape: nothing appended.
    out.clear();
    CHECK_FALSE(restamp_stream_id(bytes(text_frame(R"({"Type":"Ping"})")), 3, out));
    CHECK_FALSE(restamp_stream_id(bytes(text_frame(R"([{"ID":"x"}])")), 3, out));
    CHECK_FALSE(restamp_stream_id(bytes(std::string("\x81")), 3, out));
    CHECK(out.empty());
}
