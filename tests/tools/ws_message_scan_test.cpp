// Tests for tools/bench/ws_message_scan.h: what the WebSocket load client reads
// from the server's JSON messages (the shapes of docs/websocket.md), and what it
// refuses to guess at.
#include "ws_message_scan.h"

#include <catch2/catch.hpp>

namespace {
using mdcast::tools::scan_ws_message;
using mdcast::tools::WsMessage;
using mdcast::tools::WsMessageType;

WsMessage scanned(std::string_view text) {
    WsMessage m;
    std::string_view why;
    REQUIRE(scan_ws_message(text, m, why));
    return m;
}

std::string_view refused(std::string_view text) {
    WsMessage m;
    std::string_view why;
    CHECK_FALSE(scan_ws_message(text, m, why));
    return why;
}
}  // namespace

TEST_CASE("an update gives its stream id, sequence and conflation", "[ws_message_scan]") {
    const auto m =
        scanned(R"({"ID":17,"Type":"Update","SeqNumber":43,"Fields":{"BID":101.43,"ASK":101.48}})");
    CHECK(m.type == WsMessageType::kUpdate);
    CHECK(m.id == 17);
    CHECK(m.has_seq);
    CHECK(m.seq == 43);
    CHECK_FALSE(m.conflated);
    CHECK(scanned(R"({"ID":17,"Type":"Update","SeqNumber":50,"Conflated":true,"Fields":{}})")
              .conflated);
}

TEST_CASE("an update's publish time and what a conflated one stands for", "[ws_message_scan]") {
    // The server's layout (the fast path) ...
    auto m = scanned(
        R"({"ID":17,"Type":"Update","SeqNumber":43,"PublishTime":1700000000123456789,"Conflated":true,"ConflationInfo":{"Count":5,"Time":250},"Fields":{"BID":1}})");
    CHECK(m.seq == 43);
    CHECK(m.publish_time_ns == 1700000000123456789u);
    CHECK(m.conflated);
    CHECK(m.conflation_count == 5);
    m = scanned(R"({"ID":17,"Type":"Update","SeqNumber":44,"PublishTime":7,"Fields":{}})");
    CHECK(m.publish_time_ns == 7);
    CHECK_FALSE(m.conflated);
    CHECK(m.conflation_count == 0);
    // ... and a trade, which takes the general scan.
    m = scanned(
        R"({"ID":17,"Type":"Update","SeqNumber":45,"PublishTime":9,"UpdateType":"Trade","Conflated":true,"ConflationInfo":{"Count":2,"Time":0},"Fields":{}})");
    CHECK(m.seq == 45);
    CHECK(m.publish_time_ns == 9);
    CHECK(m.conflation_count == 2);
    CHECK(scanned(R"({"ID":17,"Type":"Update","SeqNumber":46,"Fields":{}})").publish_time_ns == 0);
    CHECK(refused(R"({"Type":"Update","SeqNumber":46,"PublishTime":"x","Fields":{}})") ==
          "PublishTime is not an unsigned integer");
    CHECK(
        refused(R"({"Type":"Update","SeqNumber":46,"ConflationInfo":{"Count":-1},"Fields":{}})") ==
        "ConflationInfo.Count is not an unsigned integer");
}

TEST_CASE("a message sent as an array of one object is read as the object", "[ws_message_scan]") {
    const auto m = scanned(R"([{"ID":17,"Type":"Update","SeqNumber":43,"Fields":{"BID":1}}])");
    CHECK(m.type == WsMessageType::kUpdate);
    CHECK(m.id == 17);
    CHECK(scanned(R"([{"Type":"Ping"}])").type == WsMessageType::kPing);
}

TEST_CASE("an update laid out otherwise is read all the same", "[ws_message_scan]") {
    const auto m = scanned(R"({"Type":"Update","SeqNumber":43,"ID":17,"Fields":{}})");
    CHECK(m.type == WsMessageType::kUpdate);
    CHECK(m.id == 17);
    CHECK(m.seq == 43);
    CHECK(scanned(R"({"ID":17,"Type":"Update","Conflated":true,"SeqNumber":9,"Fields":{}})")
              .conflated);
    CHECK(refused(R"({"ID":17,"Type":"Update","SeqNumber":x,"Fields":{}})") ==
          "SeqNumber is not an unsigned integer");
}

TEST_CASE("a refresh gives its key, state and sequence", "[ws_message_scan]") {
    const auto m =
        scanned(R"({"ID":17,"Type":"Refresh","Key":{"Service":"MDCAST","Name":"ITEM000001"},)"
                R"("State":{"Stream":"Open","Data":"Ok","Text":""},"SeqNumber":42,)"
                R"("Fields":{"DSPLY_NAME":"ITEM000001","BID":101.42}})");
    CHECK(m.type == WsMessageType::kRefresh);
    CHECK_FALSE(m.login);
    CHECK(m.service == "MDCAST");
    CHECK(m.name == "ITEM000001");
    CHECK(m.stream == "Open");
    CHECK(m.data == "Ok");
    CHECK(m.seq == 42);
}

TEST_CASE("a refused login and a refused request carry code and text", "[ws_message_scan]") {
    const auto login = scanned(
        R"({"ID":1,"Type":"Status","Domain":"Login","Key":{"Name":"alice"},)"
        R"("State":{"Stream":"Closed","Data":"Suspect","Code":"AuthFailed","Text":"wrong password"}})");
    CHECK(login.login);
    CHECK(login.code == "AuthFailed");
    CHECK(login.text == "wrong password");
    const auto item = scanned(
        R"({"ID":0,"Type":"Status","Key":{"Service":"MDCAST","Name":"NOSUCH"},)"
        R"("State":{"Stream":"Closed","Data":"Suspect","Code":"NotFound","Text":"no such item"}})");
    CHECK_FALSE(item.login);
    CHECK(item.stream == "Closed");
    CHECK(item.name == "NOSUCH");
}

TEST_CASE("field values never pass for stream members", "[ws_message_scan]") {
    // A string field holding "SeqNumber": is escaped, and fields come after the members.
    const auto m = scanned(
        R"({"ID":3,"Type":"Update","SeqNumber":7,"Fields":{"TEXT":"\"SeqNumber\":99","SeqNumber":5}})");
    CHECK(m.seq == 7);
    CHECK(refused(R"({"ID":3,"Type":"Update","Fields":{"SeqNumber":5}})") ==
          "an Update without SeqNumber");
}

TEST_CASE("pings, errors and other types are named", "[ws_message_scan]") {
    CHECK(scanned(R"({"Type":"Ping"})").type == WsMessageType::kPing);
    const auto error =
        scanned(R"({"Type":"Error","Text":"not JSON text","Debug":{"Message":"x"}})");
    CHECK(error.type == WsMessageType::kError);
    CHECK(error.error_text == "not JSON text");
    const auto other = scanned(R"({"Type":"Post","ID":4})");
    CHECK(other.type == WsMessageType::kOther);
    CHECK(other.type_text == "Post");
}

TEST_CASE("what is not a readable message is refused with a reason", "[ws_message_scan]") {
    CHECK(refused("") == "not a JSON object");
    CHECK(refused("[]") == "not a JSON object");
    CHECK(refused("[1]") == "not a JSON object");
    CHECK(refused(R"({"ID":1,"SeqNumber":2})") == "no Type");
    CHECK(refused(R"({"ID":"x","Type":"Update","SeqNumber":2})") == "ID is not an integer");
    CHECK(refused(R"({"ID":1,"Type":"Update","SeqNumber":-2})") ==
          "SeqNumber is not an unsigned integer");
    CHECK(refused(R"({"ID":1,"Type":"Refresh","Key":{"Service":"MDCAST"},"State":{}})") ==
          "a Key without a Name string");
    CHECK(refused(R"({"ID":1,"Type":"Status","Key":{"Name":"A"}})") == "no State");
}
